"""Raster inputs that are read without being loaded as QGIS layers.

Loading a raster file as a QGIS layer (``QgsRasterLayer``) makes QGIS compute band
statistics to set the default contrast enhancement of its grey renderer
(``QgsRasterLayer::setDefaultContrastEnhancement``, ``GDALComputeRasterStatistics``). GDAL
keeps them as metadata of the open dataset, and saves them when the dataset closes:

- in ``<raster>.aux.xml`` beside most formats (GDAL's PAM), which ``GDAL_PAM_ENABLED=NO``
  stops (core.classmaps.rasters.inputs_left_untouched, qgis_process.py);
- inside the ``.vrt`` itself for a VRT: GDAL 3.6's VRT driver rewrites a VRT whose metadata
  changed when it closes, whether it was opened read-only or not and whatever
  ``GDAL_PAM_ENABLED`` says. No configuration option stops that write.

So a raster given as a file (a path or a GDAL URI, not a layer already loaded in the project)
is never loaded as a QGIS layer by this provider: ``RasterFileParameter`` checks it with
GDAL, read-only, where QGIS's own check would load it (qgis_process checks every input that
way before the algorithm starts, and keeps what it loaded open until it ends), and the
algorithms read it through GDAL (``file_source``). A layer the user has loaded already is
used as it is (QGIS loaded it, not this run). One exception: a raster whose first band is
palette-indexed is loaded as a layer for its paletted renderer's class labels
(``paletted_layer``): QGIS computes no statistics for a paletted renderer.
"""

from __future__ import annotations

from qgis.core import (
    QgsProcessingParameterRasterLayer,
    QgsProcessingUtils,
    QgsRasterLayer,
)

from ..core.classmaps.rasters import inputs_left_untouched
from .compat import RASTER_LAYER_HINT


def file_source(value, context) -> str | None:
    """The raster file (path or GDAL URI) that a raster-layer parameter's ``value`` names when
    it is not a layer loaded already (a layer object, or the id, name or source of a layer
    of ``context``'s project or temporary layer store), else None (no value, a layer, a
    QgsProperty of a model: QGIS resolves those)."""
    if not isinstance(value, str) or not value.strip():
        return None
    if context is not None:
        loaded = QgsProcessingUtils.mapLayerFromString(value, context, False,
                                                       RASTER_LAYER_HINT)
        if loaded is not None:
            return None
    return value


def gdal_opens(source: str) -> bool:
    """Whether GDAL opens ``source`` as a raster, read-only (nothing computed, nothing
    written: the dataset closes unchanged)."""
    from osgeo import gdal

    try:
        with inputs_left_untouched():
            dataset = gdal.OpenEx(source, gdal.OF_RASTER | gdal.OF_READONLY)
    except RuntimeError:  # gdal.UseExceptions() is on
        return False
    return dataset is not None


def paletted_layer(source: str) -> QgsRasterLayer | None:
    """``source`` loaded as a QGIS layer when its first band is palette-indexed (QGIS then
    draws it with a paletted renderer, without computing statistics), else None."""
    from osgeo import gdal

    try:
        with inputs_left_untouched():
            dataset = gdal.OpenEx(source, gdal.OF_RASTER | gdal.OF_READONLY)
            paletted = (dataset is not None and dataset.RasterCount >= 1 and
                        dataset.GetRasterBand(1).GetColorInterpretation()
                        == gdal.GCI_PaletteIndex)
            dataset = None
            if not paletted:
                return None
            layer = QgsRasterLayer(source, "raster", "gdal")
    except RuntimeError:
        return None
    return layer if layer.isValid() else None


class RasterFileParameter(QgsProcessingParameterRasterLayer):
    """A raster-layer parameter whose check reads a raster file with GDAL instead of
    loading it as a QGIS layer (see the module's docstring); values that are layers are
    checked by QGIS as before."""

    def checkValueIsAcceptable(self, value, context=None):  # noqa: N802 (QGIS API)
        source = file_source(value, context)
        if source is None:
            return super().checkValueIsAcceptable(value, context)
        return gdal_opens(source)
