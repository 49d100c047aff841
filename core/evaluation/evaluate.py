"""Object-level evaluation of predicted polygons against reference polygons, as named stages.

``evaluate`` is a short pipeline over module-level stages, each a function a test can call
and each taking arrays for the rows it is given (the work units of ``units`` map over them):

1. ``Options.check``: the parameters, checked once, frozen (also the report's ``parameters``);
   ``check_rows``: the geometries and per-row attributes as ``Rows``.
2. ``prepare_layers``: repaired, reprojected, measured layers (geometry/prepare.py).
3. ``candidate_pairs``: overlapping pairs and IoU, within groups, of compatible classes
   (pairs/overlap.py).
4. ``match_pairs``: the matching rule (matching/rules.py) and predictions on ignore regions.
5. ``measure_boundaries``: boundary distances of matched pairs, lengths within the tolerance.
6. ``summarise``: per-reference quantities and the summary metrics (matching/summary.py);
   ``boundary_curve``, ``detection_stage``.
7. ``make_groups`` / ``group_metrics``: strata and size classes (matching/grouping.py);
   ``label_counts``: per group and class.
8. ``average_precision_stage`` (matching/average_precision.py), ``bootstrap_stage``.

Stages 6-8 read no geometry: ``conclude`` runs them on the compact arrays of a run.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field

import numpy as np
import shapely

from ..util import allocator
from .quantities import Quantities
from ..matching.average_precision import COCO_AREA_RANGES, COCO_MAX_DETECTIONS, average_precision
from ..boundary.curve import boundary_f1_by_tolerance
from ..boundary.distances import (
    BOUNDARY_SAMPLE_SPACING_M,
    centroid_utm_epsg,
    matched_distances_in_utm,
    utm_epsg_codes,
    zoned_layer,
)
from ..util.checks import check_non_negative_int, check_positive, check_threshold
from ..geometry.crs import (
    check_equal_area,
    crs_label,
    evaluation_crs,
    resolve_crs,
)
from ..matching.detection import detection_scores
from ..geometry.exact_area import lonlat_area_for
from ..matching.grouping import (
    Groups,
    bootstrap_weights,
    is_missing,
    percentile_interval,
    size_groups,
    strata_groups,
)
from ..matching.labels import ancestors_from_taxonomy, compatible_classes, is_true, normalise_labels
from ..matching.rules import (
    IOU_RTOL,
    MATCHING_METHODS,
    Matches,
    argmax_per_group,
    at_or_above,
    match,
)
from ..matching.summary import (
    Q,
    RATE_KEYS,
    f1_from_counts,
    metrics_from_sums,
    nan_median,
    ratio,
    to_builtin,
)
from ..pairs.overlap import OverlapPairs, overlap_pairs, settle
from ..geometry.prepare import PreparedLayer, geometry_array, prepare_layer
from ..geometry.stored import StoredGeometries, take
from ..util.progress import Progress
from ..util.wording import count_of, plural
from ..matching.threshold_sweep import SWEEP_THRESHOLDS, threshold_sweep
from ..boundary.tolerance import tolerance_lengths_in_utm

logger = logging.getLogger(__name__)

#: Half the equator in metres: a polygon wider than this in the equal-area CRS has been cut
#: at the antimeridian.
_HALF_WORLD_M = 20_037_508.0

#: Metrics that get bootstrap intervals (agribound 1.0's set).
BOOTSTRAP_KEYS = (
    "precision",
    "recall",
    "f1",
    "iou_mean",
    "best_iou_mean",
    "area_weighted_precision",
    "area_weighted_recall",
    "area_weighted_f1",
    "oversegmentation_mean",
    "undersegmentation_mean",
    "hausdorff_mean_m",
    "boundary_distance_mean_m",
)
BOOTSTRAP_TOLERANCE_KEYS = (
    "boundary_precision",
    "boundary_recall",
    "boundary_f1",
    "coverage_within_tolerance",
    "coverage_within_tolerance_area",
)


@dataclass(frozen=True)
class Evaluation:
    """Everything one evaluation computed.

    Attributes:
        metrics: summary metrics under agribound 1.0's key names, plus per_stratum,
            per_size_class, bootstrap, per_group, per_class when asked for.
        parameters: the parameters as used.
        reference, predicted: the prepared layers; ``keep`` maps table rows to input positions.
            Reference rows marked as ignore regions are not part of ``reference``.
        per_reference: columns of shape (reference.n,), one row per evaluated reference field
            (the agribound per-field table): area_m2, area_ha, matched, pred_index (input
            position of the matched prediction, -1), iou (NaN if unmatched), pred_area_m2,
            best_iou, n_overlapping_pred, max_overlap_pred_index, oversegmentation,
            undersegmentation, and stratum / size_class when asked for.
        per_predicted: columns of shape (predicted.n,): area_m2, matched, ref_index (input
            position of the matched reference, -1), iou, ref_area_m2, best_iou,
            overlaps_reference, ignored (matched to an ignore region: neither TP nor FP).
        warnings: messages about the data the caller should show the user.
        pairs: every overlapping (reference, predicted) pair of evaluated rows (within a
            group when groups are given); candidates: those that may match (class rule too).
            Where ``pairs.bounded``, a pair's intersection and IoU are upper bounds: pairs
            below every threshold that are nobody's best IoU or largest overlap
            (``overlap.settle``).
        ignore_coverage: float (predicted.n,): largest |p ∩ r| / |p| over the ignore
            regions a prediction may be ignored by (0 for none).
        quantities: ``quantities.Quantities``: the per-reference quantities the summary
            metrics are sums of, (reference.n, len(summary.QUANTITIES)), made on demand
            (``matrix()``: compare.py resamples them); unassigned: shape
            (len(QUANTITIES),), the sums of predictions with no home reference field.
    """

    metrics: dict
    parameters: dict
    reference: PreparedLayer
    predicted: PreparedLayer
    per_reference: dict = field(repr=False)
    per_predicted: dict = field(repr=False)
    warnings: list = field(default_factory=list)
    pairs: OverlapPairs | None = field(default=None, repr=False)
    candidates: OverlapPairs | None = field(default=None, repr=False)
    ignore_coverage: np.ndarray | None = field(default=None, repr=False)
    quantities: Quantities | None = field(default=None, repr=False)
    unassigned: np.ndarray | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Options:
    """The parameters of one evaluation, checked once (``Options.check``); frozen.

    Attributes:
        iou_threshold: minimum IoU for a match, in (0, 1].
        matching: one of ``matching.MATCHING_METHODS``.
        reference_crs, predicted_crs: pyproj CRS of each layer, or None (planar units).
        equal_area_crs: pyproj CRS in metres for areas and IoU, or None (planar units).
        size_bins: None, "auto" or size-class edges in ha, as given (checked by
            ``grouping.size_groups``).
        bootstrap, bootstrap_seed: resamples (0: none) and their seed, ints >= 0.
        ancestors: class → frozenset of its ancestor classes (``labels.ancestors_from_taxonomy``).
        strata_name: the column the strata came from, for the report.
        boundary_tolerance_m: tolerance in m (> 0) or None; boundary_sample_spacing_m: Δ in m
            (> 0) or None (per boundary).
        tolerance_multiples: tuple of multiples of the tolerance for the boundary curve, or None.
    """

    iou_threshold: float
    matching: str
    reference_crs: object
    predicted_crs: object
    equal_area_crs: object
    size_bins: object = None
    bootstrap: int = 0
    bootstrap_seed: int = 42
    ancestors: dict = field(default_factory=dict)
    strata_name: str | None = None
    boundary_tolerance_m: float | None = None
    boundary_sample_spacing_m: float | None = BOUNDARY_SAMPLE_SPACING_M
    tolerance_multiples: tuple | None = None

    @classmethod
    def check(cls, *, iou_threshold=0.5, matching="one_to_one", predicted_crs=None,
              reference_crs=None, equal_area_crs="EPSG:6933", size_bins=None, bootstrap=0,
              bootstrap_seed=42, taxonomy=None, strata_name=None, boundary_tolerance_m=None,
              boundary_sample_spacing_m=BOUNDARY_SAMPLE_SPACING_M,
              tolerance_multiples=None) -> Options:
        """Options from ``evaluate``'s keyword arguments (same names and meaning).

        Raises:
            ValueError: a parameter out of range (named in the message), a CRS that is not
                one, exactly one of the layers without a CRS, a taxonomy with a cycle.
        """
        iou_threshold = check_threshold(iou_threshold)
        if matching not in MATCHING_METHODS:
            raise ValueError(f"matching must be one of {MATCHING_METHODS}, got {matching!r}")
        bootstrap = check_non_negative_int(bootstrap, "bootstrap")
        bootstrap_seed = check_non_negative_int(bootstrap_seed, "bootstrap_seed")
        if boundary_tolerance_m is not None:
            boundary_tolerance_m = check_positive(boundary_tolerance_m, "boundary_tolerance_m")
        if boundary_sample_spacing_m is not None:
            boundary_sample_spacing_m = check_positive(
                boundary_sample_spacing_m, "boundary_sample_spacing_m"
            )
        ancestors = ancestors_from_taxonomy(taxonomy)
        ref_crs = resolve_crs(reference_crs, "reference_crs")
        pred_crs = resolve_crs(predicted_crs, "predicted_crs")
        return cls(
            iou_threshold=iou_threshold,
            matching=matching,
            reference_crs=ref_crs,
            predicted_crs=pred_crs,
            equal_area_crs=evaluation_crs(ref_crs, pred_crs, equal_area_crs),
            size_bins=size_bins,
            bootstrap=bootstrap,
            bootstrap_seed=bootstrap_seed,
            ancestors=ancestors,
            strata_name=strata_name,
            boundary_tolerance_m=boundary_tolerance_m,
            boundary_sample_spacing_m=boundary_sample_spacing_m,
            tolerance_multiples=(
                None if tolerance_multiples is None else tuple(tolerance_multiples)
            ),
        )

    @property
    def tolerance(self) -> bool:
        """True when boundary tolerance metrics are asked for."""
        return self.boundary_tolerance_m is not None

    @property
    def iou_floor(self) -> float:
        """The lowest IoU any count needs exactly (matching, the sweep, detection)."""
        return min(SWEEP_THRESHOLDS[0], self.iou_threshold) * (1.0 - IOU_RTOL)

    def lonlat_area(self):
        """``exact_area.LonLatArea`` when the layers are overlaid in longitude/latitude
        (geographic layers in a cylindrical equal-area CRS, measured exactly), else None."""
        return lonlat_area_for([self.reference_crs, self.predicted_crs], self.equal_area_crs)

    def parameters(self) -> dict:
        """The report's ``parameters``: the options as used."""
        return {
            "iou_threshold": self.iou_threshold,
            "matching": self.matching,
            "equal_area_crs": crs_label(self.equal_area_crs),
            "size_bins": self.size_bins,
            "bootstrap": self.bootstrap,
            "bootstrap_seed": self.bootstrap_seed,
            "taxonomy": {k: sorted(v) for k, v in self.ancestors.items()} or None,
            "boundary_tolerance_m": self.boundary_tolerance_m,
            "boundary_sample_spacing_m": self.boundary_sample_spacing_m,
        }


@dataclass(frozen=True)
class Rows:
    """The input rows, checked (``check_rows``): geometries and per-row attributes.

    Attributes:
        reference, predicted: object arrays of shapely geometries (None allowed), shapes
            (n_ref,) and (n_pred,), or ``StoredGeometries`` (evaluated in work units).
        ignore: bool (n_ref,): ignore regions (``is_true`` of reference_ignore).
        strata: object (n_ref,) or None.
        reference_group, predicted_group: normalised labels (n_ref,), (n_pred,) or None.
        reference_class, predicted_class: normalised (casefolded) labels or None.
        scores: float (n_pred,) (NaN: missing) or None.
    """

    reference: np.ndarray
    predicted: np.ndarray
    ignore: np.ndarray
    strata: np.ndarray | None = None
    reference_group: np.ndarray | None = None
    predicted_group: np.ndarray | None = None
    reference_class: np.ndarray | None = None
    predicted_class: np.ndarray | None = None
    scores: np.ndarray | None = None

    @property
    def stored(self) -> bool:
        """Whether a layer is on disk (``StoredGeometries``): then evaluated in units."""
        return isinstance(self.reference, StoredGeometries) or isinstance(
            self.predicted, StoredGeometries)

    def subset(self, reference_rows: np.ndarray, predicted_rows: np.ndarray) -> Rows:
        """The rows at these positions (int arrays, increasing), every column alike."""
        def pick(values, rows):
            return None if values is None else values[rows]

        return Rows(
            take(self.reference, reference_rows), take(self.predicted, predicted_rows),
            self.ignore[reference_rows], pick(self.strata, reference_rows),
            pick(self.reference_group, reference_rows), pick(self.predicted_group, predicted_rows),
            pick(self.reference_class, reference_rows), pick(self.predicted_class, predicted_rows),
            pick(self.scores, predicted_rows),
        )


def check_rows(predicted, reference, *, strata=None, reference_ignore=None,
               predicted_groups=None, reference_groups=None, predicted_classes=None,
               reference_classes=None, predicted_scores=None) -> Rows:
    """Stage 1: the layers and their per-row attributes as ``Rows``.

    Raises:
        ValueError: a per-row sequence of the wrong length, groups or classes given for one
            layer only. TypeError: a layer given as a single geometry or a non-sequence.
    """
    if not isinstance(reference, StoredGeometries):
        reference = geometry_array(reference, "reference")
    if not isinstance(predicted, StoredGeometries):
        predicted = geometry_array(predicted, "predicted")
    n_ref, n_pred = len(reference), len(predicted)
    strata = _per_row(strata, n_ref, "strata")
    reference_ignore = _per_row(reference_ignore, n_ref, "reference_ignore")
    ref_groups = _per_row(reference_groups, n_ref, "reference_groups")
    pred_groups = _per_row(predicted_groups, n_pred, "predicted_groups")
    ref_classes = _per_row(reference_classes, n_ref, "reference_classes")
    pred_classes = _per_row(predicted_classes, n_pred, "predicted_classes")
    scores = _per_row(predicted_scores, n_pred, "predicted_scores")
    if (ref_groups is None) != (pred_groups is None):
        raise ValueError("predicted_groups and reference_groups must be given together")
    if (ref_classes is None) != (pred_classes is None):
        raise ValueError("predicted_classes and reference_classes must be given together")

    def labels(values, case_insensitive):
        return None if values is None else normalise_labels(
            values, case_insensitive=case_insensitive
        )

    return Rows(
        reference,
        predicted,
        ignore=(
            np.array([is_true(v) for v in reference_ignore], dtype=bool)
            if reference_ignore is not None else np.zeros(n_ref, dtype=bool)
        ),
        strata=strata,
        reference_group=labels(ref_groups, False),
        predicted_group=labels(pred_groups, False),
        reference_class=labels(ref_classes, True),
        predicted_class=labels(pred_classes, True),
        scores=None if scores is None else _as_scores(scores),
    )


@dataclass(frozen=True)
class Layers:
    """The prepared layers (``prepare_layers``): evaluated reference fields, ignore regions
    and predictions, each a ``PreparedLayer`` whose ``keep`` indexes the rows it was given."""

    reference: PreparedLayer
    ignore: PreparedLayer
    predicted: PreparedLayer
    lonlat: object = None


def prepare_layers(rows: Rows, options: Options, progress: Progress) -> Layers:
    """Stage 2: repair, reproject and measure the rows (``prepare.prepare_layer``).

    Geographic layers in a cylindrical equal-area CRS are overlaid in longitude/latitude,
    where their edges are straight, and measured exactly (no densification). Each layer is
    prepared in chunks on both cores; progress 0-19 %.
    """
    lonlat = options.lonlat_area()
    ref_crs, ea_crs = options.reference_crs, options.equal_area_crs
    ref = _prepare_rows(
        rows.reference, np.flatnonzero(~rows.ignore), ref_crs, ea_crs, "reference",
        progress.span(0, 9), lonlat,
    )
    ignore = _prepare_rows(
        rows.reference, np.flatnonzero(rows.ignore), ref_crs, ea_crs, "reference", None, lonlat
    )
    pred = prepare_layer(
        rows.predicted, options.predicted_crs, ea_crs, "predicted", progress.span(9, 19), lonlat
    )
    return Layers(ref, ignore, pred, lonlat)


@dataclass(frozen=True)
class Candidates:
    """Pairs of one evaluation (``candidate_pairs``): ``pairs`` overlap within a group;
    ``candidates`` may match (the class rule too)."""

    pairs: OverlapPairs
    candidates: OverlapPairs


def candidate_pairs(layers: Layers, rows: Rows, options: Options, progress) -> Candidates:
    """Stage 3: overlapping pairs with their intersection and IoU (``overlap.overlap_pairs``),
    kept within a group, and those of compatible classes.

    Pairs below every IoU threshold that counts need their exact area only if they could be
    a field's best IoU or largest overlap: most neighbours overlapping by a sliver keep a
    cheap bound (``overlap.settle``).
    """
    ref, pred = layers.reference, layers.predicted
    pairs = overlap_pairs(
        ref.overlay, ref.area_m2, pred.overlay, pred.area_m2, progress,
        area=ref.area_of, iou_floor=options.iou_floor,
    )
    pairs = settle(pairs, _pair_sets(pairs, layers, rows, options), ref.overlay, ref.area_m2,
                   pred.overlay, pred.area_m2, ref.area_of)
    same_group, compatible = _pair_sets(pairs, layers, rows, options)
    candidates = pairs = pairs.subset(same_group)
    if rows.reference_class is not None:
        candidates = pairs.subset(compatible[same_group])
    return Candidates(pairs, candidates)


def _pair_sets(pairs: OverlapPairs, layers: Layers, rows: Rows, options: Options):
    """(same group, and also compatible classes): bool masks over the pairs."""
    ref_keep, pred_keep = layers.reference.keep, layers.predicted.keep
    same_group = np.ones(pairs.n, dtype=bool)
    if rows.reference_group is not None:
        same_group = (rows.reference_group[ref_keep][pairs.reference]
                      == rows.predicted_group[pred_keep][pairs.predicted])
    compatible = same_group.copy()
    if rows.reference_class is not None:
        compatible &= compatible_classes(
            rows.predicted_class[pred_keep][pairs.predicted],
            rows.reference_class[ref_keep][pairs.reference],
            options.ancestors,
        )
    return same_group, compatible


@dataclass(frozen=True)
class Matched:
    """The matching (``match_pairs``): ``matches`` (``matching.Matches``), ``coverage``
    (float (n_pred,): largest |p ∩ r| / |p| over the ignore regions a prediction may be
    ignored by, 0 for none) and ``ignored`` (bool (n_pred,): unmatched and covered by an
    ignore region at or above the threshold: neither TP nor FP)."""

    matches: Matches
    coverage: np.ndarray
    ignored: np.ndarray


def match_pairs(found: Candidates, layers: Layers, rows: Rows, options: Options) -> Matched:
    """Stage 4: match the candidates by the rule of ``options.matching``, and find the
    predictions ignored by an ignore region (COCO's crowd semantics)."""
    matches = match(found.candidates, layers.reference.n, layers.predicted.n,
                    options.iou_threshold, options.matching)
    coverage = _ignore_coverage(
        layers.ignore, layers.predicted, (rows.reference_group, rows.predicted_group),
        (rows.reference_class, rows.predicted_class), options.ancestors,
    )
    ignored = (
        (matches.predicted_match < 0) & at_or_above(coverage, options.iou_threshold)
        & (coverage > 0)
    )
    return Matched(matches, coverage, ignored)


def measure_boundaries(layers: Layers, tables: _Tables, options: Options, progress: Progress):
    """Stage 5: boundary distances of the matched pairs and, with a tolerance, the boundary
    lengths within it (``_boundary_metrics``), added to ``tables``; progress 45-75 %.
    Returns (UTM zones used, (reference, predicted) ``ZonedLayer``)."""
    progress.checkpoint(
        45,
        "Boundary distances" if options.boundary_tolerance_m is None
        else "Boundary distances and lengths within the tolerance",
    )
    return _boundary_metrics(
        layers.reference, layers.predicted, tables,
        (options.reference_crs, options.predicted_crs, options.equal_area_crs),
        options.boundary_sample_spacing_m, options.boundary_tolerance_m, progress,
    )


def run_warnings(layers: Layers, rows: Rows, options: Options, bounds) -> list[str]:
    """The data warnings of a run: an equal-area CRS that does not preserve area, rows
    dropped or repaired, planar coordinates that look like longitude/latitude (``bounds``:
    total bounds of the evaluated geometries), empty input layers."""
    ref, ignore, pred = layers.reference, layers.ignore, layers.predicted
    warnings = check_equal_area(
        options.equal_area_crs, [ref.overlay, ignore.overlay, pred.overlay], layers.lonlat
    )
    warnings += _data_warnings(ref, ignore, pred, options.equal_area_crs, bounds)
    warnings += _empty_layer_warnings(len(rows.reference), len(rows.predicted))
    return warnings


def summarise(layers: Layers, tables: _Tables, found: Candidates, matched: Matched,
              options: Options, zones: list[int], warnings: list[str]):
    """Stage 6: the per-reference quantities and the summary metrics of the whole run.

    Returns (metrics, quantities (``Quantities``), unassigned (len(QUANTITIES),));
    appends to ``warnings`` when two empty layers get the convention's rates of 1.0.
    """
    ref, ignore, pred = layers.reference, layers.ignore, layers.predicted
    tolerance = options.tolerance
    quantities, unassigned = _quantities(ref, pred, tables, options.boundary_tolerance_m)
    metrics = _group_metrics(quantities, unassigned, tables, None, tolerance)
    if ref.n == 0 and pred.n - int(matched.ignored.sum()) == 0:
        # Both layers empty (after dropping): the seed's 0.1.x convention, rates of 1.0.
        metrics.update({key: 1.0 for key in RATE_KEYS if key in metrics})
        if not _only_missing_dropped(ref, ignore, pred):
            warnings.append(
                "No row of either layer could be evaluated (see the rows not evaluated): the "
                "rates of 1.0 are the convention for two empty layers and say nothing about "
                "the data"
            )
            logger.warning(warnings[-1])
    metrics.update(_run_counts(layers, tables, found, matched, options, unassigned, zones))
    if tolerance:
        metrics["boundary_tolerance_m"] = options.boundary_tolerance_m
    return metrics, quantities, unassigned


def _run_counts(layers, tables, found, matched, options, unassigned, zones) -> dict:
    """The run's settings, counts of rows dropped, repaired and ignored, and the sweep."""
    ref, ignore, pred = layers.reference, layers.ignore, layers.predicted
    ea_crs = options.equal_area_crs
    return {
        "iou_threshold": options.iou_threshold,
        "matching": options.matching,
        "equal_area_crs": crs_label(ea_crs),
        "count_fp_unassigned": int(
            round(unassigned[Q["n_pred"]] - unassigned[Q["n_pred_matched"]])
        ),
        "threshold_sweep": threshold_sweep(
            found.candidates, ref.n, pred.n, options.matching, matched.coverage
        ),
        "count_reference_dropped": ref.n_dropped + ignore.n_dropped,
        "count_predicted_dropped": pred.n_dropped,
        "count_reference_repaired": ref.n_repaired + ignore.n_repaired,
        "dropped_by_reason": {
            "reference": {
                reason: count + ignore.n_dropped_by_reason[reason]
                for reason, count in ref.n_dropped_by_reason.items()
            },
            "predicted": pred.n_dropped_by_reason,
        },
        "count_predicted_repaired": pred.n_repaired,
        "count_ignore_regions": ignore.n,
        "count_predicted_ignored": int(matched.ignored.sum()),
        "distance_crs": (
            "WGS 84 / UTM zone of each polygon's centroid" if ea_crs is not None
            else "none (planar units)"
        ),
        "boundary_sample_spacing_m": options.boundary_sample_spacing_m,
        "boundary_sample_spacing_max_m": _finite_max(
            tables.reference["boundary_sample_spacing_m"]
        ),
        "utm_epsg_codes": zones,
    }


def boundary_curve(zoned, tolerance_m, ignored, multiples, progress) -> dict:
    """Stage 7 (with a tolerance and multiples): boundary precision, recall and F1 at the
    multiples of the tolerance (``boundary_curve.boundary_f1_by_tolerance``)."""
    return _boundary_curve(zoned, tolerance_m, ignored, multiples, progress)


def detection_stage(layers: Layers, rows: Rows, found: Candidates, matched: Matched,
                    options: Options):
    """Stage 8: spatial match and GroundSet's detection scores (``detection_scores``):
    (metrics, per-reference columns)."""
    ref, pred = layers.reference, layers.predicted
    return detection_scores(
        found.candidates, ref.n, pred.n, options.iou_threshold, matched.coverage,
        None if rows.reference_group is None
        else (rows.reference_group, rows.predicted_group, ref.keep, pred.keep),
        greedy=matched.matches if options.matching == "one_to_one" else None,
    )


def make_groups(layers: Layers, rows: Rows, options: Options) -> dict[str, Groups]:
    """Stage 9a: the strata and size classes asked for, as ``grouping.Groups`` over the
    evaluated reference fields."""
    groups: dict[str, Groups] = {}
    if rows.strata is not None:
        groups["per_stratum"] = strata_groups(rows.strata[layers.reference.keep])
    if options.size_bins is not None:
        groups["per_size_class"] = size_groups(options.size_bins, layers.reference.area_m2)
    return groups


def group_metrics(groups, quantities, unassigned, tables: _Tables, options: Options,
                  metrics: dict, per_reference: dict) -> None:
    """Stage 9b: per stratum and size class metrics into ``metrics`` (with their columns
    into ``per_reference``), in the report's key order."""
    if "per_stratum" in groups:
        per_reference["stratum"] = np.array(groups["per_stratum"].values, dtype=object)
        metrics["strata_column"] = options.strata_name
        metrics["count_reference_no_stratum"] = groups["per_stratum"].n_missing
    if "per_size_class" in groups:
        per_reference["size_class"] = np.array(groups["per_size_class"].values, dtype=object)
        metrics["size_class_edges_ha"] = [float(e) for e in groups["per_size_class"].edges]
        metrics["count_reference_outside_size_classes"] = groups["per_size_class"].n_missing
    for kind, group in groups.items():
        metrics[kind] = {}
        for code, key in enumerate(group.keys):
            members = group.members(code)
            entry = {"n": len(members)}
            if kind == "per_size_class":
                entry["lower_ha"] = float(group.edges[code])
                entry["upper_ha"] = float(group.edges[code + 1])
            entry.update(
                _group_metrics(quantities, unassigned, tables, members, options.tolerance)
            )
            metrics[kind][key] = entry


def label_counts(layers: Layers, rows: Rows, tables: _Tables) -> dict:
    """Stage 9c: counts and rates per group (image, tile) and per class, when given."""
    out = {}
    ref_keep, pred_keep = layers.reference.keep, layers.predicted.keep
    if rows.reference_group is not None:
        out["per_group"] = _counts_by_label(
            rows.reference_group[ref_keep], rows.predicted_group[pred_keep], tables,
            by_match=False,
        )
    if rows.reference_class is not None:
        out["per_class"] = _counts_by_label(
            rows.reference_class[ref_keep], rows.predicted_class[pred_keep], tables,
            by_match=True,
        )
    return out


def average_precision_stage(layers: Layers, rows: Rows, options: Options) -> dict:
    """Stage 10 (with scores): COCO-style average precision (``_average_precision``)."""
    return _average_precision(
        layers.reference, layers.ignore, layers.predicted,
        rows.scores[layers.predicted.keep], (rows.reference_group, rows.predicted_group),
        (rows.reference_class, rows.predicted_class), options.ancestors,
        planar=options.equal_area_crs is None,
    )


def bootstrap_stage(quantities, unassigned, groups, options: Options, metrics: dict,
                    progress: Progress) -> dict:
    """Stage 11: percentile bootstrap intervals (``_bootstrap``), resampling reference fields
    within strata when there are strata; progress 85-99 %."""
    progress.checkpoint(85, "Bootstrap")
    pool_codes = (
        groups["per_stratum"].codes if "per_stratum" in groups
        else np.zeros(len(quantities), dtype=np.int64)
    )
    return _bootstrap(
        quantities, unassigned, groups, options.bootstrap, options.bootstrap_seed, pool_codes,
        metrics, options.tolerance, progress,
    )


@allocator.tuned
def evaluate(
    predicted,
    reference,
    *,
    predicted_crs=None,
    reference_crs=None,
    iou_threshold: float = 0.5,
    matching: str = "one_to_one",
    equal_area_crs="EPSG:6933",
    strata=None,
    strata_name: str | None = None,
    size_bins=None,
    bootstrap: int = 0,
    bootstrap_seed: int = 42,
    predicted_groups=None,
    reference_groups=None,
    predicted_classes=None,
    reference_classes=None,
    taxonomy: dict | None = None,
    reference_ignore=None,
    predicted_scores=None,
    boundary_tolerance_m: float | None = None,
    boundary_sample_spacing_m: float | None = BOUNDARY_SAMPLE_SPACING_M,
    progress: Progress | None = None,
    tolerance_multiples=None,
    executor=None,
    work_unit_features: int | None = None,
) -> Evaluation:
    """Match predicted polygons to reference polygons by IoU and compute the summary metrics.

    Args:
        predicted: sequence of shapely geometries (None allowed), shape (n_pred,), in
            ``predicted_crs``, or ``geometry.StoredGeometries`` for a layer too large to
            hold (then the evaluation runs in work units, and the returned layers'
            ``source`` geometries are views of these stores, read from their files: keep
            the stores open while the result's sources are read). Never modified.
        reference: the same for the reference layer, shape (n_ref,), in ``reference_crs``.
        predicted_crs, reference_crs: anything ``pyproj.CRS.from_user_input`` accepts, or None
            for both to evaluate in planar (pixel) units.
        iou_threshold: minimum IoU for a match, in (0, 1], compared with relative tolerance 1e-9.
        matching: "one_to_one" (greedy by descending IoU), "many_to_one" or "optimal".
        equal_area_crs: projected CRS in metres for areas and IoU (default EPSG:6933).
        strata: one stratum value per reference row (None/NaN: no stratum), shape (n_ref,);
            strata_name: the column it came from, for the report.
        size_bins: None, "auto" or increasing size-class edges in ha.
        bootstrap: number of bootstrap resamples (0: none); bootstrap_seed: their seed (>= 0).
        predicted_groups, reference_groups: image or tile id per row; pairs match only within
            a group (and overlap statistics count only within a group).
        predicted_classes, reference_classes: class name per row; a prediction matches a
            reference of its own class or of an ancestor class in ``taxonomy``.
        taxonomy: mapping class → parent class or list of parent classes (case-insensitive).
        reference_ignore: bool per reference row; true rows are ignore regions (COCO's crowd
            semantics): predictions covering them at IoU ≥ threshold, measured as
            |p ∩ r| / |p|, are neither TP nor FP, and they are never FN.
        predicted_scores: confidence per prediction row (None/NaN ranks last); when given,
            COCO-style average precision is added under ``average_precision``.
        boundary_tolerance_m: tolerance in m for boundary precision/recall/F1 and coverage
            within tolerance (None: not computed).
        boundary_sample_spacing_m: Δ in m for the boundary distances of matched pairs (default
            1 m; None: max(1 m, perimeter / 1000) per boundary). Hausdorff distances are low by
            at most Δ/2 and mean boundary distances within Δ/4 of exact. Distances are
            measured in the WGS 84 / UTM zone of each reference field's centroid.
        progress: receives progress and may cancel (EvaluationCanceled is raised).
        tolerance_multiples: with a boundary tolerance, also boundary precision, recall and
            F1 at these multiples of it (e.g. boundary_curve.TOLERANCE_MULTIPLES), under
            ``boundary_by_tolerance`` (one more pass over the boundaries, reaching the largest
            multiple; on layers of more than ``boundary_curve.CURVE_SAMPLE_SIZE`` polygons, on
            a random sample of that many, said under ``boundary_by_tolerance.sample``).
        executor: evaluate in exact work units (``units``) on this executor: any object whose
            ``submit(fn, *args)`` returns a future (``concurrent.futures.Executor``, a
            ``distributed.Client``; its workers must import this package). The same results;
            the returned layers then hold no equal-area geometries.
        work_unit_features: evaluate in work units of about this many rows (default
            ``units.UNIT_FEATURES`` when ``executor`` is given or a layer is stored; None,
            no executor and no stored layer: one piece).

    Returns:
        An Evaluation. Areas in m² (ha where the key says so) in ``equal_area_crs``.

    Raises:
        ValueError: a parameter out of range (its name is in the message), a CRS that is not
            one, exactly one of the layers without a CRS, or per-row arrays of the wrong length.
        TypeError: a layer given as a single geometry or a non-sequence.

    Source: agribound 1.0 documentation, "Evaluation"; groups,
    classes and ignore regions beyond it as documented above.
    """
    progress = progress or Progress()
    options = Options.check(
        iou_threshold=iou_threshold, matching=matching, predicted_crs=predicted_crs,
        reference_crs=reference_crs, equal_area_crs=equal_area_crs, size_bins=size_bins,
        bootstrap=bootstrap, bootstrap_seed=bootstrap_seed, taxonomy=taxonomy,
        strata_name=strata_name, boundary_tolerance_m=boundary_tolerance_m,
        boundary_sample_spacing_m=boundary_sample_spacing_m,
        tolerance_multiples=tolerance_multiples,
    )
    rows = check_rows(
        predicted, reference, strata=strata, reference_ignore=reference_ignore,
        predicted_groups=predicted_groups, reference_groups=reference_groups,
        predicted_classes=predicted_classes, reference_classes=reference_classes,
        predicted_scores=predicted_scores,
    )
    if executor is not None or work_unit_features is not None or rows.stored:
        from .units import UNIT_FEATURES, evaluate_in_units  # units builds on these stages

        return evaluate_in_units(rows, options, progress, executor,
                                 work_unit_features or UNIT_FEATURES)
    progress.checkpoint(0, "Preparing geometries")
    layers = prepare_layers(rows, options, progress)
    progress.checkpoint(20, "Computing overlaps")
    found = candidate_pairs(layers, rows, options, progress.span(20, 39))
    progress.checkpoint(40, "Matching")
    matched = match_pairs(found, layers, rows, options)
    tables = _tables(layers.reference, layers.predicted, found.pairs, matched.matches,
                     matched.ignored, options.iou_threshold)
    zones, zoned = measure_boundaries(layers, tables, options, progress)
    progress.checkpoint(75, "Summarising")
    warnings = run_warnings(layers, rows, options, _total_bounds(layers))
    curve = None
    if options.tolerance and options.tolerance_multiples:
        progress.checkpoint(76, "Boundary F1 at larger tolerances")
        curve = boundary_curve(zoned, options.boundary_tolerance_m, matched.ignored,
                               options.tolerance_multiples, progress.span(76, 80))
    ap = None
    if rows.scores is not None:
        ap = lambda: average_precision_stage(layers, rows, options)  # noqa: E731
    return conclude(layers, rows, options, found, matched, tables, zones, warnings, curve,
                    ap, progress)


def conclude(layers, rows, options, found, matched, tables, zones, warnings, curve, ap,
             progress) -> Evaluation:
    """Stages 6-11 on the run's compact arrays (no geometry is read): summary, boundary
    curve (given, ``curve``), distributions, detection, groups, labels, average precision
    (``ap``: a callable giving it, or None), bootstrap; the ``Evaluation``."""
    metrics, quantities, unassigned = summarise(
        layers, tables, found, matched, options, zones, warnings
    )
    if curve is not None:
        metrics["boundary_by_tolerance"] = curve
        for key in ("boundary_precision", "boundary_recall", "boundary_f1"):
            # The same value as the metric, to the last bit (a sampled curve keeps its own).
            if options.tolerance_multiples[0] == 1.0 and curve["sample"] is None:
                curve[key][0] = metrics[key]
    metrics["precision_among_overlapping"] = precision_among_overlapping(metrics)
    metrics.update(_distribution("iou", tables.reference["iou"][tables.reference["matched"]]))
    metrics.update(_distribution("best_iou", tables.reference["best_iou"]))
    per_reference = tables.reference
    detection, detection_columns = detection_stage(layers, rows, found, matched, options)
    metrics.update(detection)
    per_reference.update(detection_columns)
    groups = make_groups(layers, rows, options)
    group_metrics(groups, quantities, unassigned, tables, options, metrics, per_reference)
    metrics.update(label_counts(layers, rows, tables))
    if ap is not None:
        progress.checkpoint(80, "Average precision")
        metrics["average_precision"] = ap()
    if options.bootstrap:
        metrics["bootstrap"] = bootstrap_stage(
            quantities, unassigned, groups, options, metrics, progress
        )
    progress.checkpoint(100, "Evaluation done")
    return Evaluation(
        metrics, options.parameters(), layers.reference, layers.predicted, per_reference,
        tables.predicted, warnings, pairs=found.pairs, candidates=found.candidates,
        ignore_coverage=matched.coverage, quantities=quantities, unassigned=unassigned,
    )


def _total_bounds(layers: Layers) -> np.ndarray:
    """(xmin, ymin, xmax, ymax) of the evaluated reference and predicted geometries (NaN
    when there are none)."""
    ref, pred = layers.reference, layers.predicted
    if ref.n + pred.n == 0:
        return np.full(4, np.nan)
    return shapely.total_bounds(np.concatenate([ref.geometries, pred.geometries]))


def precision_among_overlapping(metrics: dict) -> float:
    """Precision among the predictions that overlap a reference field:
    count_tp / (count_tp + count_fp − count_fp_unassigned); 0 on an empty denominator, 1 when
    both layers are empty (as precision). For registries that cover only some fields, where a
    prediction on an unregistered field is no error of the model.

    Source: agribound 1.0 evaluation, count_fp_unassigned ("precision computed without them").
    """
    tp, fp = metrics["count_tp"], metrics["count_fp"]
    denominator = tp + fp - metrics["count_fp_unassigned"]
    if denominator == 0:  # no prediction counted (precision's rule), or none overlaps
        return float(metrics["precision"]) if tp + fp == 0 else 0.0
    return tp / denominator


@dataclass(frozen=True)
class _Tables:
    reference: dict
    predicted: dict
    pred_home: np.ndarray  # reference position of each prediction's home, -1 for none
    matched_pred: np.ndarray  # per reference: matched predicted position, -1
    n_above_ref: np.ndarray
    n_above_pred: np.ndarray


def _tables(ref, pred, pairs, matches, ignored, iou_threshold) -> _Tables:
    """Per-reference and per-prediction columns from the pairs and the matches."""
    ref_match = matches.reference_match
    pred_match = matches.predicted_match
    ref_matched = ref_match >= 0
    pred_matched = pred_match >= 0
    mr = np.flatnonzero(ref_matched)
    mp = np.flatnonzero(pred_matched)

    ref_iou = np.full(ref.n, np.nan)
    ref_iou[mr] = pairs.iou[pairs.find(mr, ref_match[mr])]
    pred_iou = np.full(pred.n, np.nan)
    pred_iou[mp] = pairs.iou[pairs.find(pred_match[mp], mp)]
    pred_area_matched = np.full(ref.n, np.nan)
    pred_area_matched[mr] = pred.area_m2[ref_match[mr]]
    ref_area_matched = np.full(pred.n, np.nan)
    ref_area_matched[mp] = ref.area_m2[pred_match[mp]]

    best_iou_ref = np.zeros(ref.n)
    np.maximum.at(best_iou_ref, pairs.reference, pairs.iou)
    best_iou_pred = np.zeros(pred.n)
    np.maximum.at(best_iou_pred, pairs.predicted, pairs.iou)
    max_overlap_pred = argmax_per_group(
        pairs.reference, pairs.intersection_m2, pairs.predicted, ref.n
    )
    max_overlap_ref = argmax_per_group(
        pairs.predicted, pairs.intersection_m2, pairs.reference, pred.n
    )

    # Persello & Bruzzone (2010) maximum-overlap pairing: p' maximises |r ∩ p'|.
    inter_max = np.zeros(ref.n)
    np.maximum.at(inter_max, pairs.reference, pairs.intersection_m2)
    has_overlap = max_overlap_pred >= 0
    oversegmentation = np.clip(1.0 - inter_max / ref.area_m2, 0.0, 1.0)
    undersegmentation = np.full(ref.n, np.nan)
    undersegmentation[has_overlap] = np.clip(
        1.0 - inter_max[has_overlap] / pred.area_m2[max_overlap_pred[has_overlap]], 0.0, 1.0
    )
    above = at_or_above(pairs.iou, iou_threshold)

    reference = {
        "area_m2": ref.area_m2,
        "area_ha": ref.area_m2 / 1e4,
        "matched": ref_matched,
        "pred_index": _input_position(pred, ref_match),
        "iou": ref_iou,
        "pred_area_m2": pred_area_matched,
        "best_iou": best_iou_ref,
        "n_overlapping_pred": np.bincount(pairs.reference, minlength=ref.n),
        "max_overlap_pred_index": _input_position(pred, max_overlap_pred),
        "oversegmentation": oversegmentation,
        "undersegmentation": undersegmentation,
    }
    predicted = {
        "area_m2": pred.area_m2,
        "matched": pred_matched,
        "ref_index": _input_position(ref, pred_match),
        "iou": pred_iou,
        "ref_area_m2": ref_area_matched,
        "best_iou": best_iou_pred,
        "overlaps_reference": max_overlap_ref >= 0,
        "ignored": ignored,
    }
    return _Tables(
        reference=reference,
        predicted=predicted,
        # Home reference of a prediction: its match, else the reference it overlaps most.
        pred_home=np.where(pred_matched, pred_match, max_overlap_ref),
        matched_pred=ref_match,
        n_above_ref=np.bincount(pairs.reference[above], minlength=ref.n),
        n_above_pred=np.bincount(pairs.predicted[above], minlength=pred.n),
    )


def _quantities(ref, pred, tables: _Tables, tolerance_m):
    """Per-reference quantities (``quantities.Quantities``, made block by block) and the
    sums of predictions that have no home reference (len(QUANTITIES),); see
    summary.QUANTITIES."""
    q = Quantities(ref.area_m2, tables.reference, tables.n_above_ref, pred.area_m2,
                   tables.predicted, tables.n_above_pred, tables.pred_home, tolerance_m)
    return q, q.unassigned


def _group_metrics(quantities, unassigned, tables: _Tables, members, tolerance) -> dict:
    """Metrics of the reference fields ``members`` (all fields and unassigned predictions
    when None). An empty group has undefined (NaN) rates rather than 0."""
    if members is None:
        sums = quantities.sums() + unassigned
        members = np.arange(len(quantities))
        empty_rate = 0.0
    else:
        sums = quantities.sums(members)
        empty_rate = np.nan if len(members) == 0 else 0.0
    metrics = to_builtin(metrics_from_sums(sums, empty_rate=empty_rate, tolerance=tolerance))
    r = tables.reference
    matched = members[r["matched"][members]]
    metrics["median_area_ha"] = nan_median(r["area_ha"][members])
    metrics["hausdorff_median_m"] = nan_median(r["hausdorff_m"][matched])
    metrics["boundary_distance_median_m"] = nan_median(r["boundary_mean_distance_m"][matched])
    return metrics


def _distribution(name: str, values: np.ndarray) -> dict:
    """Median and 10th percentile (the spatial_iou_guide's advice: report distributions)."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return {f"{name}_median": float("nan"), f"{name}_p10": float("nan")}
    return {
        f"{name}_median": float(np.median(values)),
        f"{name}_p10": float(np.percentile(values, 10)),
    }


def _counts_by_label(ref_label, pred_label, tables: _Tables, *, by_match: bool) -> dict:
    """Counts, precision, recall, F1 and mean IoU per group or class label.

    TP and FN count references by their own label; predictions count by their own label,
    except (``by_match``, for classes) a matched prediction, which counts with the class of
    the reference it matched (a child class answering for its parent). Ignored predictions
    are not counted.
    """
    r, p = tables.reference, tables.predicted
    pred_key = pred_label.copy()
    if by_match:
        matched = np.flatnonzero(p["matched"])
        pred_key[matched] = ref_label[tables.pred_home[matched]]
    counted = ~p["ignored"]
    out = {}
    for label in sorted(set(ref_label) | set(pred_key[counted])):
        in_ref = ref_label == label
        in_pred = (pred_key == label) & counted
        tp = int(np.sum(r["matched"] & in_ref))
        fp = int(np.sum(in_pred & ~p["matched"]))
        fn = int(np.sum(in_ref & ~r["matched"]))
        precision = float(ratio(tp, tp + fp, 0.0))
        recall = float(ratio(tp, tp + fn, 0.0))
        out[label] = {  # the missing label is labels.MISSING (""), as in average precision
            "count_reference": int(in_ref.sum()),
            "count_predicted": int(in_pred.sum()),
            "count_tp": tp,
            "count_fp": fp,
            "count_fn": fn,
            "precision": precision,
            "recall": recall,
            "f1": float(f1_from_counts(tp, fp, fn, precision, recall)),
            "iou_mean": float(ratio(np.nansum(r["iou"][in_ref & r["matched"]]), tp, 0.0)),
        }
    return out


def _bootstrap(
    quantities, unassigned, groups, n_resamples, seed, pool_codes, metrics, tolerance, progress
):
    """Percentile intervals of BOOTSTRAP_KEYS, resampling reference fields (within strata);
    per-group intervals go into the per_stratum / per_size_class entries."""
    targets = [("overall", None, None)] + [
        (kind, key, group.members(code))
        for kind, group in groups.items()
        for code, key in enumerate(group.keys)
    ]
    names = BOOTSTRAP_KEYS + (BOOTSTRAP_TOLERANCE_KEYS if tolerance else ())
    replicates = {(kind, key): np.empty((n_resamples, len(names))) for kind, key, _ in targets}
    info = {
        "n_resamples": n_resamples,
        "seed": seed,
        "confidence_level": 0.95,
        "method": "percentile",
        "resampling": "reference fields with replacement"
        + (" within strata" if "per_stratum" in groups else ""),
        "ci": {},
        "n_undefined": {},
    }
    if len(quantities) == 0:
        logger.warning("No reference fields to resample; bootstrap intervals are not computed")
        return info

    def report(fraction):
        progress.checkpoint(85 + 14 * fraction)  # "Bootstrap" was said once, at 85 %

    matrix = quantities.matrix()  # every row at once: 208 MB per million fields
    for first, weights in bootstrap_weights(n_resamples, seed, pool_codes, report):
        last = first + len(weights)
        for kind, key, idx in targets:
            if idx is None:
                sums = weights @ matrix + unassigned
            else:
                sums = weights[:, idx] @ matrix[idx]
            values = metrics_from_sums(sums, empty_rate=np.nan, tolerance=tolerance)
            replicates[(kind, key)][first:last] = np.column_stack(
                [values[name] for name in names]
            )
    for kind, key, _ in targets:
        ci, undefined = {}, {}
        for j, name in enumerate(names):
            ci[name], n_undefined = percentile_interval(replicates[(kind, key)][:, j])
            if n_undefined:
                undefined[name] = n_undefined
        if kind == "overall":
            info["ci"], info["n_undefined"] = ci, undefined
        else:
            metrics[kind][key]["ci"] = ci
            if undefined:
                metrics[kind][key]["ci_n_undefined"] = undefined
    return info


def _boundary_metrics(
    ref, pred, tables: _Tables, crss, spacing_m, tolerance_m, progress: Progress
) -> tuple[list[int], tuple]:
    """Add the boundary columns to the per-reference (and per-prediction) tables; returns the
    UTM zones used and the layers measured, (reference, predicted) ``ZonedLayer``.

    Matched pairs get hausdorff_m, boundary_mean_distance_m and boundary_sample_spacing_m,
    both polygons in the reference field's UTM zone (a pair wider than a zone or beyond ±80°:
    in a scale-corrected conformal CRS), and distance_crs saying which; every reference gets
    perimeter_m and utm_epsg. With a tolerance, both layers get boundary_within_tolerance_m
    (each polygon in its own zone, against the other layer's boundaries), and references
    boundary_recall and within_tolerance (matched with a mean boundary distance within the
    tolerance).
    Source: agribound 1.0 documentation, "Evaluation": "Geometry and coordinate systems" and
    "With boundary_tolerance_m".
    """
    ref_crs, pred_crs, ea_crs = crss
    r, p = tables.reference, tables.predicted
    ref_zoned = zoned_layer(ref.source, ref_crs, _zones(ref, ea_crs))
    pred_zoned = zoned_layer(pred.source, pred_crs, _zones(pred, ea_crs))
    matched = np.flatnonzero(r["matched"])

    def distances_of_matches(advance):
        return matched_distances_in_utm(
            ref_zoned, pred_zoned, matched, tables.matched_pred[matched], spacing_m,
            progress=advance, describe_pairs=lambda k: ", ".join(
                f"reference row {ref.keep[matched[i]]} / predicted row "
                f"{pred.keep[tables.matched_pred[matched[i]]]}" for i in k
            ),
        )

    if tolerance_m is None:
        distances = distances_of_matches(progress.span(45, 75))
    else:
        # One after the other, each on both cores. Side by side (parallel.run_beside) they
        # were no faster, and in some processes (PYTHONHASHSEED=4 on bench's fields_50k, about
        # half of all runs) the tolerance stage then took 9x the time and 2.5 GB: not
        # understood yet (the third session of bench/README.md: git show 5bfee3c:bench/README.md).
        distances = distances_of_matches(progress.span(45, 65))
        within_ref, perimeter_ref, within_pred, perimeter_pred = tolerance_lengths_in_utm(
            ref_zoned, pred_zoned, tolerance_m, progress=progress.span(65, 75)
        )
    for name, values in (
        ("hausdorff_m", distances.hausdorff_m),
        ("boundary_mean_distance_m", distances.mean_distance_m),
        ("boundary_sample_spacing_m", distances.spacing_m),
    ):
        r[name] = np.full(ref.n, np.nan)
        r[name][matched] = values
    if tolerance_m is None:
        r["perimeter_m"] = (
            shapely.length(shapely.boundary(ref_zoned.local)) if ref.n else np.zeros(0)
        )
    else:
        r["perimeter_m"] = perimeter_ref
    r["utm_epsg"] = ref_zoned.epsg
    r["distance_crs"] = np.full(ref.n, "", dtype=object)
    r["distance_crs"][matched] = distances.distance_crs
    if tolerance_m is not None:
        r["boundary_within_tolerance_m"] = within_ref
        r["boundary_recall"] = ratio(within_ref, perimeter_ref, np.nan)
        r["within_tolerance"] = r["matched"] & (
            np.nan_to_num(r["boundary_mean_distance_m"], nan=np.inf) <= tolerance_m
        )
        p["perimeter_m"] = perimeter_pred
        p["boundary_within_tolerance_m"] = within_pred
    return utm_epsg_codes(ref_zoned, pred_zoned), (ref_zoned, pred_zoned)


def _boundary_curve(zoned, tolerance_m, ignored, multiples, progress):
    """Boundary precision, recall and F1 from 1x to 4x the tolerance (boundary_curve.py),
    on the UTM boundaries the boundary metrics measured (``zoned``: reference, predicted)."""
    ref_zoned, pred_zoned = zoned
    return boundary_f1_by_tolerance(
        ref_zoned,
        pred_zoned,
        tolerance_m,
        predicted_counted=~ignored,
        multiples=tuple(multiples),
        progress=progress,
    )


def _zones(layer: PreparedLayer, ea_crs) -> np.ndarray:
    """UTM zone (EPSG) of each polygon: from its centroid in the equal-area CRS, as the seed
    does; a polygon cut at the antimeridian (parts at both ends of the world there) takes the
    zone of its centroid in its own, continuous, source coordinates instead."""
    zones = centroid_utm_epsg(layer.geometries, ea_crs)
    if ea_crs is None or layer.n == 0:
        return zones
    xmin, _, xmax, _ = shapely.bounds(layer.geometries).T
    cut = np.flatnonzero(xmax - xmin > _HALF_WORLD_M)
    if len(cut):
        zones[cut] = centroid_utm_epsg(layer.source[cut], layer.crs)
    return zones


def _only_missing_dropped(*layers: PreparedLayer) -> bool:
    """True when every dropped row of these layers was null or empty (nothing to evaluate),
    none for a data error (non-polygonal, non-finite, zero area, not projectable)."""
    return all(
        count == 0
        for layer in layers
        for reason, count in layer.n_dropped_by_reason.items()
        if reason not in ("null", "empty")
    )


#: How the report words each reason for not evaluating a row (prepare.DROP_REASONS).
_DROP_WORDS = {
    "null": "no geometry",
    "empty": "empty geometry",
    "not_polygonal": "points or lines",
    "non_finite": "non-finite coordinates",
    "zero_area": "zero area",
    "not_projectable": "not projectable to the equal-area CRS",
}


def _data_warnings(ref, ignore, pred, ea_crs, bounds) -> list[str]:
    """Messages for the report about rows dropped or repaired, and about planar coordinates
    that look like longitude/latitude (a layer whose CRS got lost; ``bounds``: total bounds of
    the evaluated geometries, float (4,))."""
    messages = []
    for name, layers in (("reference", (ref, ignore)), ("predicted", (pred,))):
        n_input = sum(layer.n_input for layer in layers)
        dropped = {
            reason: sum(layer.n_dropped_by_reason[reason] for layer in layers)
            for reason in layers[0].n_dropped_by_reason
        }
        n_dropped = sum(dropped.values())
        if n_dropped:
            reasons = ", ".join(
                f"{_DROP_WORDS.get(k, k.replace('_', ' '))} {v:,}" for k, v in dropped.items() if v
            )
            messages.append(
                f"{n_dropped:,} of {count_of(n_input, f'{name} row', thousands=True)} "
                f"{plural(n_dropped, 'was', 'were')} not evaluated: {reasons}"
            )
        n_repaired = sum(layer.n_repaired for layer in layers)
        if n_repaired:
            repaired = count_of(n_repaired, f"invalid {name} geometry",
                                f"invalid {name} geometries", thousands=True)
            messages.append(
                f"{repaired} {plural(n_repaired, 'was', 'were')} repaired (make_valid, keeping "
                "their polygonal parts) and evaluated"
            )
    if ea_crs is None and ref.n + pred.n:
        xmin, ymin, xmax, ymax = bounds
        if -180 <= xmin and xmax <= 360 and -90 <= ymin and ymax <= 90:
            messages.append(
                "The layers have no CRS and their coordinates look like longitude/latitude: "
                "areas are in squared coordinate units; assign the layers their CRS"
            )
            logger.warning(messages[-1])  # the drop and repair counts are logged by prepare
    return messages


def _empty_layer_warnings(n_reference: int, n_predicted: int) -> list[str]:
    """A warning (also logged) for each input layer without a single row, or one for both
    when both are: the run is scored by the seed's empty-denominator rules, which say little
    about a model."""
    if n_reference == n_predicted == 0:
        messages = ["Both layers are empty (no features): nothing is scored; precision, recall "
                    "and F1 are 1.0 by convention"]
    else:
        messages = [f"The {name} layer is empty (no features): {rule}" for name, n, rule in (
            ("reference", n_reference, "every prediction is a false positive, recall is 0"),
            ("predicted", n_predicted, "every reference field is a false negative, precision "
                                       "is 0"),
        ) if n == 0]
    for message in messages:
        logger.warning(message)
    return messages


def _finite_max(values) -> float:
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    return float(values.max()) if len(values) else float("nan")


def _average_precision(ref, ignore, pred, scores, groups, classes, ancestors, *, planar,
                       precomputed=None):
    """COCO-style AP over the evaluated predictions, references and ignore regions.

    COCO's object size ranges (32² and 96² pixels) apply in planar pixel space only; with
    groups (images) COCO's 100 detections per image are kept, without them every prediction.
    """
    references = (None if precomputed is not None
                  else np.concatenate([ref.overlay, ignore.overlay]))
    crowd = np.r_[np.zeros(ref.n, dtype=bool), np.ones(ignore.n, dtype=bool)]

    def both(labels):
        return None if labels is None else np.concatenate([labels[ref.keep], labels[ignore.keep]])

    (ref_group, pred_group), (ref_class, pred_class) = groups, classes
    return average_precision(
        None if precomputed is not None else pred.overlay,
        scores,
        references,
        predicted_class=None if pred_class is None else pred_class[pred.keep],
        reference_class=both(ref_class),
        predicted_group=None if pred_group is None else pred_group[pred.keep],
        reference_group=both(ref_group),
        reference_ignore=crowd,
        class_ancestors=ancestors or None,
        max_detections=COCO_MAX_DETECTIONS if pred_group is not None else None,
        area_ranges=COCO_AREA_RANGES if planar else None,
        area=None if pred.lonlat is None else pred.area_of,
        precomputed=precomputed,
    )


def _as_scores(values) -> np.ndarray:
    """Scores as floats; missing or non-numeric values become NaN (ranked last)."""
    out = np.full(len(values), np.nan)
    for k, value in enumerate(values):
        if is_missing(value) or isinstance(value, bool):
            continue
        try:
            out[k] = float(value)
        except (TypeError, ValueError):
            pass
    return out


def _ignore_coverage(ignore, pred, groups, classes, ancestors) -> np.ndarray:
    """Per prediction, the largest |p ∩ r| / |p| over the ignore regions r in its group and of
    a compatible class (0 for none): an unmatched prediction with coverage at or above the
    threshold is ignored (COCO's crowd IoU)."""
    coverage = np.zeros(pred.n)
    if ignore.n == 0 or pred.n == 0:
        return coverage
    pairs = overlap_pairs(ignore.overlay, ignore.area_m2, pred.overlay, pred.area_m2,
                          area=pred.area_of)
    ok = np.ones(pairs.n, dtype=bool)
    (ref_group, pred_group), (ref_class, pred_class) = groups, classes
    if ref_group is not None:
        ok &= ref_group[ignore.keep][pairs.reference] == pred_group[pred.keep][pairs.predicted]
    if ref_class is not None:
        ok &= compatible_classes(
            pred_class[pred.keep][pairs.predicted], ref_class[ignore.keep][pairs.reference],
            ancestors,
        )
    np.maximum.at(
        coverage, pairs.predicted[ok], pairs.intersection_m2[ok] / pred.area_m2[pairs.predicted[ok]]
    )
    return coverage


def _prepare_rows(geometries, rows, crs, ea_crs, name, progress=None,
                  lonlat_area=None) -> PreparedLayer:
    """prepare_layer on a subset of rows, with ``keep`` mapped back to input positions."""
    layer = prepare_layer(geometries[rows], crs, ea_crs, name, progress, lonlat_area)
    return dataclasses.replace(layer, keep=rows[layer.keep])


def _per_row(values, n: int, name: str):
    """An optional per-row sequence as an object array of length n; raises ValueError if the
    length differs."""
    if values is None:
        return None
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    if len(out) != n:
        raise ValueError(f"{name} must have one value per row ({n}), got {len(out)}")
    return out


def _input_position(layer: PreparedLayer, positions: np.ndarray) -> np.ndarray:
    """Map positions among a layer's evaluated rows to input positions; -1 stays -1."""
    out = np.full(len(positions), -1, dtype=np.int64)
    valid = positions >= 0
    out[valid] = layer.keep[positions[valid]]
    return out
