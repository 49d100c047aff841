"""Long help (the toolbox tooltip) of the parameters of ioueval:evaluatepolygons and
ioueval:pixelsperfield that are declared in their own modules. The parameters shared with
other algorithms carry theirs from parameters.py."""

EVALUATE_POLYGONS = {
    "PREDICTED": "The polygons to score (model output, extracted boundaries), in any CRS; "
    "invalid geometries are repaired, null, empty and zero-area features dropped and counted.",
    "REFERENCE": "The reference (ground truth) polygons, in any CRS.",
    "REFERENCE_ID_FIELD": "Keys the per-field table and the TP layer's ref_id, so the table "
    "joins back to the reference layer. Default: the feature id (column ref_fid).",
    "SCORE_FIELD": "A numeric confidence per prediction: adds COCO-style average precision "
    "(AP@[.50:.95], AP50, AP75, AR) and a precision-recall curve.",
    "PREDICTED_CLASS_FIELD": "Class-aware matching: a prediction matches a reference of its "
    "own class or of an ancestor class in the taxonomy. Give both class fields.",
    "REFERENCE_CLASS_FIELD": "Class of each reference feature (see the predicted class field).",
    "TAXONOMY": 'A JSON file {"house": "building", "building": ["structure"]}: each class '
    "and its parent class(es), case-insensitive.",
    "REFERENCE_IGNORE_FIELD": "True (1, true, yes) marks an ignore region (COCO crowd): "
    "predictions covering it are neither TP nor FP, and it is never a FN.",
    "PREDICTED_GROUP_FIELD": "Image or tile id: pairs match only within the same group. Give "
    "both group fields.",
    "REFERENCE_GROUP_FIELD": "Image or tile id of each reference feature.",
    "TRUE_POSITIVES": "Matched predictions with their attributes and ref_id, iou, "
    "pred_area_m2, ref_area_m2 (styled blue).",
    "FALSE_POSITIVES": "Unmatched predictions with best_iou, pred_area_m2 and "
    "overlaps_reference (styled orange, dashed).",
    "FALSE_NEGATIVES": "Unmatched reference features with best_iou, ref_area_m2 and "
    "max_overlap_pred_fid (styled purple, hatched).",
    "PER_FIELD": "One row per evaluated reference feature: area, matched prediction, IoU, best "
    "IoU, overlapping predictions, over- and under-segmentation.",
    "REPORT_JSON": "Every metric, the parameters, the inputs and library versions, "
    "machine-readable (it feeds Check release thresholds).",
    "REPORT_HTML": "The same report to read and forward: one self-contained HTML file.",
}

PIXELS_PER_FIELD = {
    "INPUT": "A polygon layer in any CRS (fields, parcels).",
    "GSD": "The ground sample distance (pixel size) of the sensor, in metres.",
    "FIELD_NAME": "Name of the column added to every feature.",
    "EQUAL_AREA_CRS": "A projected CRS in metres that preserves areas (default EPSG:6933).",
    "OUTPUT": "The input features with the new column (NULL where a feature has no area).",
}
