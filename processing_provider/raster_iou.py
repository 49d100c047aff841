"""Processing algorithm ioueval:rasteriou: per-class IoU and mIoU of two label rasters."""

from __future__ import annotations

from pathlib import Path

from qgis.core import (
    QgsPalettedRasterRenderer,
    QgsProcessingException,
    QgsProcessingParameterBand,
    QgsProcessingParameterFile,
    QgsProcessingParameterRasterDestination,
    QgsProcessingParameterString,
    QgsRasterLayer,
)

from ..core.reports.class_map import build_class_map_report
from ..core.matching.labels import label_text
from ..core.util.wording import count_of, plural
from ..core.classmaps.rasters import (
    inputs_left_untouched,
    open_band,
    raster_confusion,
    read_class_table,
)
from . import parameter_help
from .class_maps import ClassMapAlgorithm
from .parameters import add_missing_help, requested
from .raster_inputs import RasterFileParameter, file_source, paletted_layer
from .styles import STYLE_DIR, StylePostProcessor

HELP = """
<p>Scores a predicted class raster against a reference class raster, class by class.
The reference grid is the target: each reference pixel takes the predicted pixel under its
centre (nearest neighbour, computed on the fly from both geotransforms and, when the CRSs
differ, a PROJ transformation; no file is written). The transformation is exact at the
corners of cells of 64 pixels and interpolated in between where it stays within 0.01
predicted pixel of PROJ (cells that do not are cut smaller, down to single pixels), as
GDAL's approximate transformer does. Longitudes wrap as GDAL wraps them: a prediction stored
in 0…360° meets a reference in −180…180°. Only the overlapping extent is scored; the report
gives both grids, the sub-pixel shift and the share of valid reference pixels the
prediction does not cover.</p>
<p><b>Nodata is never guessed.</b> Reference pixels that are nodata (the band's own value,
or NaN) or carry an <i>ignore value</i> (void) are left out. A prediction that is nodata on a
valid reference pixel counts in the <b>no prediction</b> row; a predicted value that is not a
class of the class table counts in <b>other</b>: both are omissions of the reference class,
never dropped. Class 0 is a class unless listed in the ignore values.</p>
<p>Confusion matrix: <b>rows = prediction, columns = reference</b>, int64 counts. Per class
k: TP = M[k,k], FP = row sum − TP, FN = column sum − TP;
<b>IoU = TP / (TP + FP + FN)</b>, Dice (F1) = 2TP / (2TP + FP + FN), precision (user's
accuracy) = TP / (TP + FP), recall (producer's accuracy) = TP / (TP + FN).
<b>mIoU</b> = mean IoU over the classes present in either map; a class absent from both is
reported as absent and left out (scikit-learn's labels= macro mean and torchmetrics would
count it as 0: the report gives that value too). Frequency-weighted IoU = Σ (reference
share × IoU); pixel accuracy = Σ TP / all scored pixels. Areas in m² on the ground, on the
reference CRS's ellipsoid: in a geographic CRS each row's cell area; in a projected CRS that
is not equal-area (Web Mercator, UTM) the plane's pixel area corrected by the CRS's scale
(at 60° N a Web Mercator pixel is about 4 times larger in the plane than on the ground), with
a warning giving the factor. Definitions: Everingham et al. 2010 (PASCAL VOC); Long et al.
2015 (FCN).</p>
<p>The rasters are read in blocks of about 2 million reference pixels (a 20,000 × 20,000
pair runs in about 150 MB); progress is reported and a cancel stops at the next block.</p>
<p>Classes: from the CLASS_NAMES file, which fixes them: lines <code>value,name</code>, a
QGIS colour map file (<code>value,red,green,blue,alpha,label</code>, as <i>Export color map
to file</i> writes it) or a QGIS palette export (<code>value red green blue alpha
label</code>); otherwise every value met in either raster, named from the reference layer's
paletted renderer or the rasters' attribute tables, read as GDAL maps values to rows
(linear binning, Min/Max or value columns; a table of generic columns as QGIS reads it) or
their category names. Class values are compared at each raster's own precision (a Float32
raster's 0.1 is the class 0.1). The agreement raster codes 1 correct, 2 wrong class, 3
other, 4 no prediction, 5 outside the prediction (0 = not evaluated).</p>
"""


class RasterIoUAlgorithm(ClassMapAlgorithm):
    NAME = "rasteriou"
    DISPLAY_NAME = "Label raster IoU"
    HELP = HELP
    SHORT_HELP = "Per-class IoU, mIoU and pixel accuracy of a predicted and a reference raster."
    PREDICTED = "PREDICTED"
    REFERENCE = "REFERENCE"
    PREDICTED_BAND = "PREDICTED_BAND"
    REFERENCE_BAND = "REFERENCE_BAND"
    IGNORE_VALUES = "IGNORE_VALUES"
    CLASS_NAMES = "CLASS_NAMES"
    AGREEMENT_RASTER = "AGREEMENT_RASTER"
    EXTRA_DESTINATIONS = (AGREEMENT_RASTER,)
    NUMERIC_OUTPUTS = {
        **ClassMapAlgorithm.NUMERIC_OUTPUTS,
        "PIXEL_ACCURACY": ("pixel_accuracy", "Pixel accuracy"),
    }

    def initAlgorithm(self, config=None):  # noqa: N802
        for layer, band, label in (
            (self.PREDICTED, self.PREDICTED_BAND, "Predicted class raster"),
            (self.REFERENCE, self.REFERENCE_BAND, "Reference class raster"),
        ):
            self.addParameter(RasterFileParameter(layer, self.tr(label)))
            self.addParameter(QgsProcessingParameterBand(
                band, self.tr("{layer}: band").format(layer=self.tr(label)), defaultValue=1,
                parentLayerParameterName=layer,
                # Optional only so that an omitted value takes the default: 3.22 rejects a
                # missing band even when the parameter has a default.
                optional=True,
            ))
        self.addParameter(QgsProcessingParameterString(
            self.IGNORE_VALUES,
            self.tr("Values to ignore (void), comma-separated, besides each raster's nodata"),
            defaultValue="", optional=True,
        ))
        self.addParameter(QgsProcessingParameterFile(
            self.CLASS_NAMES, self.tr("Class table (value,name per line; fixes the classes)"),
            optional=True, fileFilter="Class tables (*.csv *.txt);;All files (*.*)",
        ))
        self.add_class_map_outputs()
        self.addParameter(QgsProcessingParameterRasterDestination(
            self.AGREEMENT_RASTER, self.tr("Agreement raster (correct / wrong / missed)"),
            optional=True, createByDefault=False,
        ))
        add_missing_help(self, parameter_help.RASTER_IOU)

    def checkParameterValues(self, parameters, context):  # noqa: N802
        # QGIS's own check loads the input layers (see _band: inputs are never modified).
        with inputs_left_untouched():
            ok, message = super().checkParameterValues(parameters, context)
        if not ok:
            return ok, message
        try:
            self._ignore_values(parameters, context)
            self._class_table(parameters, context)
            for name, band in ((self.PREDICTED, self.PREDICTED_BAND),
                               (self.REFERENCE, self.REFERENCE_BAND)):
                self._band(parameters, context, name, band)
        except ValueError as exc:
            return False, str(exc)
        error = self.destination_error(parameters)
        return (False, error) if error else (True, "")

    def _ignore_values(self, parameters, context) -> list[float]:
        text = self.parameterAsString(parameters, self.IGNORE_VALUES, context) or ""
        values = []
        for part in filter(None, (p.strip() for p in text.replace(";", ",").split(","))):
            try:
                values.append(float(part))
            except ValueError:
                raise ValueError(f"IGNORE_VALUES: {part!r} is not a number") from None
        return values

    def _class_table(self, parameters, context):
        path = self.parameterAsFile(parameters, self.CLASS_NAMES, context)
        if not path:
            return None
        try:
            return read_class_table(path)
        except OSError as exc:
            raise ValueError(f"CLASS_NAMES: cannot read {path}: {exc}") from None

    def _band(self, parameters, context, name, band_name):
        """(RasterBand, the QGIS layer or None): a raster file is read by GDAL and loaded
        as a layer only when paletted (raster_inputs: inputs are never modified)."""
        band = self.parameterAsInt(parameters, band_name, context) or 1
        source = file_source(parameters.get(name), context)
        if source is not None:
            return open_band(source, band, name), paletted_layer(source)
        # A layer loaded already, or a model's value: QGIS resolves it. Loading a raster
        # layer makes QGIS compute band statistics, which GDAL would otherwise save as
        # <raster>.aux.xml beside the input.
        with inputs_left_untouched():
            layer = self.parameterAsRasterLayer(parameters, name, context)
        if layer is None:
            raise ValueError(f"{name}: the raster could not be read")
        if layer.providerType() != "gdal":
            raise ValueError(f"{name}: a raster GDAL can read is needed, got a "
                             f"{layer.providerType()} layer")
        return open_band(layer.source(), band, name), layer

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        try:
            predicted, _ = self._band(parameters, context, self.PREDICTED, self.PREDICTED_BAND)
            reference, ref_layer = self._band(
                parameters, context, self.REFERENCE, self.REFERENCE_BAND
            )
            ignore = self._ignore_values(parameters, context)
            class_table = self._class_table(parameters, context) or _renderer_names(ref_layer)
        except ValueError as exc:
            raise QgsProcessingException(str(exc)) from exc
        fixed = bool(self.parameterAsFile(parameters, self.CLASS_NAMES, context))
        agreement = None
        if requested(parameters, self.AGREEMENT_RASTER):
            agreement = self.parameterAsOutputLayer(parameters, self.AGREEMENT_RASTER, context)
        feedback.setProgressText(self.tr("Comparing the rasters block by block"))
        result = self.run_core(
            feedback, raster_confusion, predicted, reference, ignore,
            class_table=class_table if fixed else None,
            agreement_path=agreement,
            progress=self.progress(feedback, 0, 90),
        )
        if result is None:
            return {}
        if not fixed and class_table:  # names from the paletted renderer
            for value, name in class_table:
                # At the raster's precision: QGIS keeps a Float32 raster's 0.1 as
                # 0.10000000149011612.
                k = result.classes.find(value, reference.dtype)
                if k is not None and name:
                    result.classes.names[k] = name
        for message in result.warnings:
            feedback.pushWarning(message)
        report = build_class_map_report(
            result.classes, result.counts, result.areas_m2, "pixels", result.alignment,
            parameters={"ignore_values": ignore, "class_table": "file" if fixed else
                        ("paletted renderer" if class_table else "values found")},
            inputs={
                "reference": _raster_input(reference), "predicted": _raster_input(predicted),
            },
            warnings=result.warnings, **self.report_arguments(parameters, context),
        )
        shift = result.alignment["share_reference_outside_prediction"]
        feedback.pushInfo(
            f"mIoU {_fmt(report['miou'])} over "
            f"{count_of(report['conventions']['n_classes_in_mean'], 'class', 'classes')}, "
            f"pixel accuracy {_fmt(report['pixel_accuracy'])}, FWIoU "
            f"{_fmt(report['fwiou'])}; valid reference pixels outside the prediction: "
            f"{_fmt(shift)}"
        )
        results = self.write_class_map_outputs(parameters, context, feedback, report)
        if agreement:
            results[self.AGREEMENT_RASTER] = agreement
            _style_agreement(agreement, context)
        return results


def _renderer_names(layer: QgsRasterLayer | None):
    """(value, label) of a paletted renderer's classes, or None (also without a layer)."""
    renderer = layer.renderer() if layer is not None else None
    if not isinstance(renderer, QgsPalettedRasterRenderer):
        return None
    rows = []
    for item in renderer.classes():
        value = float(item.value)
        rows.append((int(value) if value.is_integer() else value,
                     label_text(item.label, casefold=False)))
    return rows or None


def _raster_input(band) -> dict:
    """A raster as the report's "What was compared" shows it."""
    return {
        "source": band.path,
        "layer_name": Path(band.path).name,
        "crs": band.describe()["crs"],
        "feature_count": None,
        "selected_features_only": False,
        "filter": None,
        "band": band.band,
        "size": f"{band.width} × {band.height} {plural(band.width * band.height, 'pixel')}",
    }


def _fmt(value) -> str:
    return "–" if value is None else f"{value:.4f}"


AGREEMENT_STYLE = str(STYLE_DIR / "agreement.qml")


def _style_agreement(path: str, context) -> None:
    """Store the agreement style beside the file (.qml) and apply it when QGIS loads it."""
    target = Path(path).with_suffix(".qml")
    try:
        target.write_text(Path(AGREEMENT_STYLE).read_text(encoding="utf-8"), encoding="utf-8")
    except OSError:
        pass
    if context.willLoadLayerOnCompletion(path):
        details = context.layerToLoadOnCompletionDetails(path)
        details.setPostProcessor(_RasterStyle.for_style(AGREEMENT_STYLE))


class _RasterStyle(StylePostProcessor):
    """StylePostProcessor for raster layers."""

    _instances: dict = {}

    def postProcessLayer(self, layer, context, feedback):  # noqa: N802
        if isinstance(layer, QgsRasterLayer):
            layer.loadNamedStyle(self.qml_path)
            layer.triggerRepaint()
