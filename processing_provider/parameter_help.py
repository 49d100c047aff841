"""Long help (the toolbox tooltip) of the parameters that algorithms declare in their own
modules (ioueval:evaluatepolygons, pixelsperfield, parsemodeloutput, spatialmatch, rasteriou,
classmapiou). The parameters declared by parameters.py's helpers carry theirs already;
parameters.add_missing_help gives these to the others."""

EVALUATE_POLYGONS = {
    "PREDICTED": "The polygons to score (model output, extracted boundaries), in any CRS; "
    "invalid geometries are repaired, null, empty and zero-area features dropped and counted.",
    "REFERENCE": "The reference (ground truth) polygons, in any CRS.",
    "REFERENCE_ID_FIELD": "Keys the per-field table and the TP layer's ref_id, so the table "
    "joins back to the reference layer. Default: the feature id (column ref_fid).",
    "PREDICTED_ID_FIELD": "The predicted layer's own id: written as pred_id beside pred_fid "
    "in the TP and FP layers and the per-field table (and max_overlap_pred_id in the FN "
    "layer), so they join back to the predictions. Default: feature ids only.",
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
    "DASK_SCHEDULER": "Address of a running Dask scheduler (tcp://host:8786) whose workers "
    "can import the plugin: the evaluation runs there in exact work units (the same numbers). "
    "The layers must be files; empty: this machine. Needs dask[distributed].",
}

PIXELS_PER_FIELD = {
    "INPUT": "A polygon layer in any CRS (fields, parcels).",
    "GSD": "The ground sample distance (pixel size) of the sensor, in metres.",
    "FIELD_NAME": "Name of the column added to every feature.",
    "EQUAL_AREA_CRS": "A projected CRS in metres that preserves areas (default EPSG:6933).",
    "OUTPUT": "The input features with the new column (NULL where a feature has no area).",
}

#: The parameters of the tables of model answers (model_text_parameters.py), shared by
#: ioueval:parsemodeloutput and ioueval:spatialmatch.
MODEL_TEXT = {
    "COORDINATE_FORMAT": "How numbers are read: pixels, fractions 0-1, a 0-1000 grid (x or y "
    "first), percent, or map coordinates. Default: auto, each model syntax with its own "
    "convention, plain numbers by their range (a warning when ambiguous); a bare list in "
    "prose is then no geometry. A chosen format also reads bare lists in prose and replaces a "
    "syntax's convention, except loc and bin tokens and Gemini's box_2d / point, whose "
    "convention the model fixes.",
    "PADDED_SQUARE": "The model saw the image padded to a square (LLaVA-1.5, Shikra): its "
    "fractions are of that square, and the padding is undone with the image width and height. "
    "Default: off.",
    "IMAGE_WIDTH_FIELD": "Width of each row's image in pixels: normalised coordinates become "
    "pixels, and pixel geometries outside the image are flagged out_of_bounds.",
    "IMAGE_HEIGHT_FIELD": "Height of each row's image in pixels (see the width field).",
}

PARSE_MODEL_OUTPUT = {
    **MODEL_TEXT,
    "INPUT": "A table (CSV, GeoPackage, any layer) with one model answer per row.",
    "TEXT_FIELD": "The text column holding each answer, with its boxes, polygons, masks or "
    "points in any format the help lists.",
    "ID_FIELD": "Copied to every output feature as row_id, so geometries join back to their "
    "answer. Default: the feature id.",
    "CRS": "CRS of map coordinates (format map, GeoJSON) when no raster is given.",
    "RASTER": "A georeferenced image: pixel coordinates become map coordinates through its "
    "geotransform, and its size is the image size of rows without one.",
    "OBB_TO_HBB": "Write each oriented box as its axis-aligned envelope (status repaired). "
    "Default: off, oriented boxes stay rotated.",
    "OUTPUT": "Polygons (boxes, oriented boxes, polygons, masks) with row_id, index, raw text "
    "span, convention, frame, warning and status.",
    "POINTS": "Point answers, with the same columns as the polygons.",
    "FAILURES": "Records without geometry (non_finite, unparseable) and answers that yielded "
    "nothing (empty, failed), with the reason.",
}

SPATIAL_MATCH = {
    **MODEL_TEXT,
    "INPUT": "A table with one model answer and its expected geometry per row.",
    "ANSWER_FIELD": "The text column of the model's answers (any format parsemodeloutput "
    "reads).",
    "EXPECTED_FIELD": "The text column of the expected geometries: one box, a list of "
    "acceptable ones, or an empty list when nothing is expected.",
    "ID_FIELD": "Copied to the scored rows as row_id. Default: the feature id.",
    "IOU_THRESHOLD": "A row passes when its best IoU = |A ∩ E| / |A ∪ E| is at least this "
    "(relative tolerance 1e-9). Default 0.5.",
    "GROUP_FIELD": "A column (model, prompt, class): the summary is repeated per value. A "
    "row whose value is NULL counts in the totals and in no group.",
    "OUTPUT": "One row per answer: best IoU, Dice, GIoU, pass, centre and point hits, and the "
    "parse status of the answer and of the expected geometry.",
}

#: The outputs of both class-map algorithms (class_maps.ClassMapAlgorithm).
CLASS_MAP_OUTPUTS = {
    "OUTPUT_TABLE": "One row per class: IoU, Dice, precision, recall, TP, FP and FN (pixels, "
    "or m² for polygons) and its status (present in both, reference only, prediction only, "
    "absent from both).",
    "REPORT_JSON": "Confusion matrix, per-class metrics, mIoU, parameters and library "
    "versions, machine-readable (it feeds Check release thresholds).",
    "REPORT_HTML": "The same report to read: one self-contained HTML file.",
}

RASTER_IOU = {
    **CLASS_MAP_OUTPUTS,
    "PREDICTED": "The predicted class raster (one class value per pixel), any CRS GDAL reads.",
    "PREDICTED_BAND": "The band of the predicted raster holding the classes. Default: 1.",
    "REFERENCE": "The reference class raster: its grid is the one scored.",
    "REFERENCE_BAND": "The band of the reference raster holding the classes. Default: 1.",
    "IGNORE_VALUES": "Class values that are void (not scored), besides each raster's own "
    "nodata, e.g. 0,255. Default: none (class 0 is a class).",
    "CLASS_NAMES": "A file of value,name lines, a QGIS colour map file or a QGIS palette "
    "export that fixes the classes and their names. Default: every value met, named from the "
    "reference's palette or the rasters' attribute tables.",
    "AGREEMENT_RASTER": "On the reference grid: 1 correct, 2 wrong class, 3 other, 4 no "
    "prediction, 5 outside the prediction, 0 not evaluated.",
}

CLASSMAP_IOU = {
    **CLASS_MAP_OUTPUTS,
    "PREDICTED": "The predicted categorised polygons (a land-cover or crop map), any CRS.",
    "PREDICTED_CLASS_FIELD": "The field of the predicted layer holding each polygon's class "
    "(compared as trimmed, case-insensitive text).",
    "REFERENCE": "The reference categorised polygons, any CRS.",
    "REFERENCE_CLASS_FIELD": "The field of the reference layer holding each polygon's class.",
    "EQUAL_AREA_CRS": "A projected CRS in metres that preserves areas (default EPSG:6933).",
    "STUDY_AREA": "Polygons bounding the area scored. Default: where the two layers' "
    "extents overlap.",
}
