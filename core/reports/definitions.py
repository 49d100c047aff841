"""Definitions of every key of ioueval:evaluatepolygons' JSON report: what it means, its
formula and the source of the definition (shown in the HTML report's appendix)."""

from __future__ import annotations

from .html import Definition

AGRIBOUND = "agribound 1.0 evaluation documentation"
AGRIBOUND_01 = "agribound 0.1.x, kept in 1.0 (agribound 1.0 evaluation documentation)"
COCO = "COCO detection evaluation (Lin et al. 2014; pycocotools cocoeval), 101-point interpolation"
PB2010 = ("Persello & Bruzzone 2010, doi:10.1109/TGRS.2009.2029570; Clinton et al. 2010, "
          "doi:10.14358/PERS.76.3.289; via agribound 1.0")
PLUGIN = "this plugin (README)"
GALTEA = "Galtea spatial match"
GROUNDSET = "GroundSet evaluation, Ferrod et al. 2026"
GUIDE = ("Spatial IoU guide for LLM-generated geometries: report distributions, not only "
         "means")

_EMPTY = "0 on an empty denominator, 1 when both layers are empty"

#: (key, meaning, formula, source), in the order the report shows them.
_ROWS = (
    # --- headline -----------------------------------------------------------------------
    ("precision", "Share of the counted predictions that matched a reference field.",
     f"TP / (TP + FP); {_EMPTY}", AGRIBOUND_01),
    ("recall", "Share of the reference fields that were matched.",
     f"TP / (TP + FN); {_EMPTY}", AGRIBOUND_01),
    ("f1", "Harmonic mean of precision and recall.",
     "2 · precision · recall / (precision + recall)", AGRIBOUND_01),
    ("iou_mean", "Mean IoU of the matched pairs.",
     "Σ IoU(matched pairs) / TP, IoU(p, r) = |p ∩ r| / |p ∪ r|; 0 when nothing matched",
     AGRIBOUND_01),
    ("precision_among_overlapping",
     "Precision among the predictions that overlap a reference field: the precision to use "
     "when the reference covers only some fields (a registry).",
     "TP / (TP + FP − count_fp_unassigned)", AGRIBOUND + ", 'Incomplete reference layers'"),
    ("count_tp", "True positives: matched reference fields.", "", AGRIBOUND_01),
    ("count_fp", "False positives: predictions not matched (predictions on ignore regions "
     "are not counted).", "count_predicted − matched predictions", AGRIBOUND_01),
    ("count_fn", "False negatives: reference fields not matched.", "count_reference − TP",
     AGRIBOUND_01),
    ("count_predicted", "Predictions evaluated (after dropping, without those on ignore "
     "regions).", "", AGRIBOUND_01),
    ("count_reference", "Reference fields evaluated (after dropping, without ignore "
     "regions).", "", AGRIBOUND_01),
    ("count_fp_unassigned", "False positives that overlap no reference field.", "", AGRIBOUND),
    # --- IoU distribution ---------------------------------------------------------------
    ("iou_median", "Median IoU of the matched pairs.", "", GUIDE),
    ("iou_p10", "10th percentile of the IoU of the matched pairs (linear interpolation).", "",
     GUIDE),
    ("best_iou_mean", "Mean over all reference fields of the highest IoU with any prediction "
     "(0 when none overlaps); not conditional on a match.", "Σ_r max_p IoU(p, r) / count_reference",
     AGRIBOUND),
    ("best_iou_median", "Median over reference fields of the highest IoU with any prediction.",
     "", GUIDE),
    ("best_iou_p10", "10th percentile over reference fields of the highest IoU with any "
     "prediction.", "", GUIDE),
    ("threshold_sweep", "TP, FP, FN, precision, recall and F1 at IoU thresholds 0.05, 0.10, "
     "…, 0.95: the candidate pairs matched again with the same rule at each threshold, so "
     "each column equals a full run at that threshold.",
     "lists iou_threshold, count_tp, count_fp, count_fn, precision, recall, f1", PLUGIN),
    # --- areas and segmentation ---------------------------------------------------------
    ("area_weighted_precision", "Area of matched predictions / area of all predictions.",
     f"Σ|p matched| / Σ|p|; {_EMPTY}", AGRIBOUND),
    ("area_weighted_recall", "Area of matched reference fields / area of all reference fields.",
     f"Σ|r matched| / Σ|r|; {_EMPTY}", AGRIBOUND),
    ("area_weighted_f1", "Harmonic mean of the area-weighted precision and recall.", "",
     AGRIBOUND),
    ("reference_area_ha", "Total area of the evaluated reference fields, in ha.", "Σ|r| / 10⁴",
     AGRIBOUND),
    ("predicted_area_ha", "Total area of the evaluated predictions, in ha.", "Σ|p| / 10⁴",
     AGRIBOUND),
    ("median_area_ha", "Median reference field area, in ha.", "", AGRIBOUND),
    ("area_error_mean_m2", "Mean absolute area difference of matched pairs, in m².",
     "Σ ||p| − |r|| / TP; 0 when nothing matched", AGRIBOUND_01),
    ("area_error_signed_mean_m2", "Mean of (predicted − reference) area over matched pairs, "
     "in m²: negative when predictions are too small.", "Σ (|p| − |r|) / TP", AGRIBOUND),
    ("over_segmentation", "0.1.x key: share of reference fields with more than one "
     "prediction at IoU ≥ threshold. Always 0 above 0.5 with non-overlapping predictions.",
     "#{r : #{p : IoU(p, r) ≥ t} > 1} / count_reference", AGRIBOUND_01),
    ("under_segmentation", "0.1.x key: share of predictions with more than one reference "
     "field at IoU ≥ threshold. Always 0 above 0.5 with non-overlapping references.",
     "#{p : #{r : IoU(p, r) ≥ t} > 1} / count_predicted", AGRIBOUND_01),
    ("oversegmentation_mean", "Mean over reference fields of OS: how much of a field its "
     "best-overlapping prediction misses (splits raise it). 1 for a field no prediction "
     "overlaps.", "OS = 1 − |r ∩ p′| / |r|, p′ = argmax_p |r ∩ p|", PB2010),
    ("undersegmentation_mean", "Mean over reference fields (with an overlapping prediction) "
     "of US: how much of the best-overlapping prediction lies outside the field (merges "
     "raise it).", "US = 1 − |r ∩ p′| / |p′|", PB2010),
    # --- boundaries ---------------------------------------------------------------------
    ("hausdorff_mean_m", "Mean Hausdorff distance between the boundaries of matched pairs, "
     "in m (low by at most Δ/2).", "max(sup_{x∈∂r} d(x, ∂p), sup_{x∈∂p} d(x, ∂r))", AGRIBOUND),
    ("hausdorff_median_m", "Median Hausdorff distance of matched pairs, in m.", "", AGRIBOUND),
    ("boundary_distance_mean_m", "Mean over matched pairs of the symmetric mean boundary "
     "distance, in m (within Δ/4 of exact).",
     "(∫∂r d(x, ∂p) dx + ∫∂p d(x, ∂r) dx) / (|∂r| + |∂p|)", AGRIBOUND),
    ("boundary_distance_median_m", "Median symmetric mean boundary distance of matched "
     "pairs, in m.", "", AGRIBOUND),
    ("boundary_tolerance_m", "The boundary tolerance t, in m.", "", AGRIBOUND),
    ("boundary_recall", "Length of reference boundaries within t of a predicted boundary / "
     "total reference boundary length (exact circular-arc buffers).",
     f"Σ|∂r ∩ buffer(∂P, t)| / Σ|∂r|; {_EMPTY}", AGRIBOUND),
    ("boundary_precision", "The same for predicted boundaries against reference boundaries.",
     f"Σ|∂p ∩ buffer(∂R, t)| / Σ|∂p|; {_EMPTY}", AGRIBOUND),
    ("boundary_f1", "Harmonic mean of boundary precision and recall.", "", AGRIBOUND),
    ("coverage_within_tolerance", "Share of reference fields that are matched with a "
     "symmetric mean boundary distance ≤ t.", "", AGRIBOUND),
    ("coverage_within_tolerance_area", "The same, weighted by reference field area.", "",
     AGRIBOUND),
    ("boundary_by_tolerance", "Boundary precision, recall and F1 with the tolerance at 1, "
     "1.5, 2, 3 and 4 times t, measured exactly on the same boundaries (written with the "
     "HTML report). Layers of more than 2,000 polygons are measured on a random sample of "
     "2,000 reference and 2,000 predicted polygons (sample: how many of how many, and the "
     "seed), each against every polygon of the other layer near it.",
     "lists multiple, tolerance_m, boundary_precision, boundary_recall, boundary_f1; sample",
     PLUGIN),
    ("boundary_sample_spacing_m", "Δ: the boundary sampling step asked for, in m (null: "
     "max(1 m, perimeter / 1000) per boundary).", "", AGRIBOUND),
    ("boundary_sample_spacing_max_m", "The largest Δ used for any matched pair, in m.", "",
     AGRIBOUND),
    ("distance_crs", "Where distances are measured: the WGS 84 / UTM zone of each polygon's "
     "centroid.", "", AGRIBOUND),
    ("utm_epsg_codes", "EPSG codes of the UTM zones used.", "", AGRIBOUND),
    # --- how it was computed ------------------------------------------------------------
    ("iou_threshold", "Minimum IoU for a match (compared with relative tolerance 1e-9).", "",
     AGRIBOUND_01),
    ("matching", "Matching rule: one_to_one (greedy by descending IoU), many_to_one (each "
     "reference takes its best prediction) or optimal (most matches, then largest total IoU).",
     "", AGRIBOUND + "; optimal: Kuhn 1955 via scipy"),
    ("equal_area_crs", "CRS of areas and IoU (default EPSG:6933).", "", AGRIBOUND),
    ("count_reference_dropped", "Reference rows not evaluated (null, empty, non-polygonal, "
     "non-finite, zero area, not projectable).", "", AGRIBOUND),
    ("count_predicted_dropped", "Predicted rows not evaluated, for the same reasons.", "",
     AGRIBOUND),
    ("dropped_by_reason", "Rows not evaluated, by layer and reason.", "", PLUGIN),
    ("count_reference_repaired", "Invalid reference geometries repaired (make_valid, "
     "structure method) and evaluated.", "", AGRIBOUND),
    ("count_predicted_repaired", "Invalid predicted geometries repaired and evaluated.", "",
     AGRIBOUND),
    ("count_ignore_regions", "Reference rows flagged as ignore regions.", "",
     PLUGIN + "; COCO crowd"),
    ("count_predicted_ignored", "Unmatched predictions covered by an ignore region "
     "(|p ∩ r| / |p| ≥ threshold): neither TP nor FP.", "", PLUGIN + "; COCO crowd"),
    # --- groups -------------------------------------------------------------------------
    ("strata_column", "The reference field holding the strata.", "", AGRIBOUND),
    ("count_reference_no_stratum", "Reference fields without a stratum value (counted only "
     "overall).", "", AGRIBOUND),
    ("per_stratum", "The metrics above for the reference fields of each stratum and their "
     "home predictions (matched, else most-overlapping); predictions overlapping nothing "
     "count only overall.", "", AGRIBOUND),
    ("size_class_edges_ha", "Edges of the size classes, in ha: [lower, upper), the last "
     "[lower, upper].", "", AGRIBOUND),
    ("count_reference_outside_size_classes", "Reference fields outside every size class.", "",
     AGRIBOUND),
    ("per_size_class", "The metrics above per size class of the reference field area.", "",
     AGRIBOUND),
    ("per_stratum.*.n", "Reference fields in the stratum (or size class).", "", AGRIBOUND),
    ("per_size_class.*.lower_ha", "Lower edge of the size class, in ha.", "", AGRIBOUND),
    ("per_size_class.*.upper_ha", "Upper edge of the size class, in ha.", "", AGRIBOUND),
    ("per_stratum.*.ci", "95 % bootstrap intervals of the group's metrics.", "", AGRIBOUND),
    ("per_stratum.*.ci_n_undefined", "Resamples in which a metric was undefined (left out of "
     "its interval).", "", PLUGIN),
    ("per_group", "TP, FP, FN, precision, recall, F1 and mean IoU per image or tile id "
     "(pairs match only within a group).", "", PLUGIN),
    ("per_class", "The same per class; a matched prediction counts with its reference's class "
     "(a child class answering for its parent). Class names are stripped and casefolded; "
     "the missing class is \"\" (shown as “(none)”).", "", PLUGIN + "; GroundSet taxonomy"),
    ("per_class.*.count_reference", "Reference fields of the class (or group).", "", PLUGIN),
    ("per_class.*.count_predicted", "Predictions of the class (or group).", "", PLUGIN),
    # --- bootstrap ----------------------------------------------------------------------
    ("bootstrap", "Percentile bootstrap intervals, resampling reference fields with "
     "replacement (within strata when given). They treat fields as independent: too narrow "
     "when errors are spatially clustered.", "", AGRIBOUND + "; Stehman & Foody 2019"),
    ("bootstrap.n_resamples", "Number of resamples.", "", AGRIBOUND),
    ("bootstrap.seed", "Seed of numpy.random.SeedSequence.", "", AGRIBOUND),
    ("bootstrap.confidence_level", "Confidence level of the intervals (0.95).", "", AGRIBOUND),
    ("bootstrap.method", "Interval method (percentile).", "", AGRIBOUND),
    ("bootstrap.resampling", "What was resampled.", "", AGRIBOUND),
    ("bootstrap.ci", "[lower, upper] of each metric.", "2.5th and 97.5th percentiles of the "
     "resampled values", AGRIBOUND),
    ("bootstrap.n_undefined", "Resamples in which a metric was undefined.", "", PLUGIN),
    # --- average precision --------------------------------------------------------------
    ("average_precision", "COCO-style average precision, ranking predictions by the score "
     "field.", "", COCO),
    ("average_precision.ap", "AP averaged over IoU thresholds 0.50:0.05:0.95 (and classes).",
     "mean_t mean_{r∈{0,0.01,…,1}} max_{r'≥r} precision(r')", COCO),
    ("average_precision.ap50", "AP at IoU 0.50.", "", COCO),
    ("average_precision.ap75", "AP at IoU 0.75.", "", COCO),
    ("average_precision.ap_small", "AP of small objects (< 32² pixels; planar layers only).",
     "", COCO),
    ("average_precision.ap_medium", "AP of medium objects (32²–96² pixels).", "", COCO),
    ("average_precision.ap_large", "AP of large objects (> 96² pixels).", "", COCO),
    ("average_precision.ar", "Average recall over IoU 0.50:0.95 with all detections.", "", COCO),
    ("average_precision.ar_1", "Average recall with at most 1 detection (per image).", "", COCO),
    ("average_precision.ar_10", "Average recall with at most 10 detections.", "", COCO),
    ("average_precision.ar_small", "AR of small objects.", "", COCO),
    ("average_precision.ar_medium", "AR of medium objects.", "", COCO),
    ("average_precision.ar_large", "AR of large objects.", "", COCO),
    ("average_precision.per_class", "ap, ap50, ap75, ar and counts per class.", "", COCO),
    ("average_precision.pr_curve", "Interpolated precision at recall 0, 0.01, …, 1, averaged "
     "over IoU 0.50:0.95.", "", COCO),
    ("average_precision.pr_curve_50", "The same at IoU 0.50.", "", COCO),
    ("average_precision.iou_thresholds", "IoU thresholds of AP.", "", COCO),
    ("average_precision.max_detections", "Detections kept per image (null: all).", "", COCO),
    ("average_precision.count_reference", "References counted by AP.", "", COCO),
    ("average_precision.count_reference_ignored", "Ignore regions (crowd) seen by AP.", "",
     COCO),
    ("average_precision.count_predicted", "Predictions ranked by AP.", "", COCO),
    ("average_precision.count_predicted_nan_score", "Predictions without a score (ranked "
     "last).", "", PLUGIN),
    ("average_precision.count_predicted_beyond_max_detections", "Predictions beyond "
     "max_detections per image (not ranked).", "", COCO),
    ("average_precision.count_class_with_reference", "Classes with at least one reference "
     "(AP averages over them).", "", COCO),
    # --- detection-style scores (core/matching/detection.py) ----------------------------------------
    ("spatial_match_rate", "Share of reference fields whose best IoU with any prediction that "
     "may match them (same group, compatible class) reaches the threshold; one prediction may "
     "serve several references (per-field column spatial_match).",
     "count_spatial_match / count_reference; 0 without references", GALTEA),
    ("count_spatial_match", "Reference fields that pass the spatial match.", "", GALTEA),
    ("groundset_precision", "Precision of GroundSet's rule: greedy one-to-one matching by "
     "descending IoU among candidates, whatever MATCHING is; a duplicate is a FP.",
     "TP / (TP + FP); 0 on an empty denominator", GROUNDSET),
    ("groundset_recall", "Recall of GroundSet's rule.", "TP / (TP + FN); 0 on an empty "
     "denominator", GROUNDSET),
    ("groundset_f1", "F1 at the IoU threshold (GroundSet's F1@0.5 at 0.5).",
     "2 · P · R / (P + R); 0 when P + R = 0", GROUNDSET),
    ("groundset_count_tp", "GroundSet true positives: references claimed by a prediction "
     "with IoU ≥ threshold.", "", GROUNDSET),
    ("groundset_count_fp", "GroundSet false positives: predictions with IoU < threshold or "
     "duplicates (predictions on ignore regions are not counted).", "", GROUNDSET),
    ("groundset_count_fn", "GroundSet false negatives: references not claimed.", "",
     GROUNDSET),
    ("groundset_miou", "Mean over reference fields of the best IoU of a candidate "
     "prediction, matched or not: a missed reference (false negative) counts its best IoU, "
     "0 only when no candidate overlaps it.", "Σ max IoU / count_reference", GROUNDSET),
    ("count_tn", "True negatives (with group fields): groups (images) with neither an "
     "evaluated reference nor a counted prediction, e.g. a group whose rows all have null "
     "geometries (an answer of nothing where nothing exists).", "", GROUNDSET),
    ("count_groups", "Group values found in either layer (rows without a group value are "
     "not a group).", "", GROUNDSET),
    # --- study area (STUDY_AREA; issue 13) ------------------------------------------------
    ("study_area_rule", "How the study area selected the rows of both layers alike: "
     "intersects (shares a point with it), centroid_within (centroid inside or on the "
     "outline), clip (cut to it; rows without area inside left out).", "",
     "agribound aoi_selection (agribound 1.0 evaluation documentation, 'In the pipeline')"),
    ("count_reference_outside_study_area", "Reference rows the study area left out.", "",
     PLUGIN),
    ("count_predicted_outside_study_area", "Predicted rows the study area left out.", "",
     PLUGIN),
    ("count_reference_clipped", "Reference rows cut at the study area's outline (clip).",
     "", PLUGIN),
    ("count_predicted_clipped", "Predicted rows cut at the study area's outline (clip).",
     "", PLUGIN),
    # --- the rest of the report -----------------------------------------------------------
    ("worst_reference_fields", "Up to 12 reference fields with the lowest best IoU (ties: "
     "larger first), leaving out those whose best IoU shows as 1.00 (at least 0.995): id, "
     "best IoU, matched IoU, area, predictions overlapping.", "", PLUGIN),
    ("outcome_areas_ha", "Areas of the outcomes, in ha: tp_reference (matched reference "
     "fields), tp_predicted (matched predictions), fp (unmatched predictions, without those "
     "on ignore regions), fn (unmatched reference fields).", "Σ|·| / 10⁴ in the equal-area CRS",
     PLUGIN),
    ("parameters", "The parameters as used (and the field names given).", "", PLUGIN),
    ("inputs", "Each input: source, layer, CRS, features read, selection or filter.", "",
     PLUGIN),
    ("provenance", "Versions of the plugin, QGIS and the libraries; date of the run (UTC).",
     "", PLUGIN),
    ("reproduce", "The parameters as plain values, for processing.run and qgis_process.", "",
     PLUGIN),
    ("warnings", "Every warning of the run (also in the log and under Alerts).", "", PLUGIN),
)

DEFINITIONS = tuple(Definition(*row) for row in _ROWS)


def definition_keys() -> set[str]:
    """The keys defined (a test checks that every key of a report has one)."""
    return {d.key for d in DEFINITIONS}
