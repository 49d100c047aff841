"""Pixels per field: A / GSD², in the core and as ioueval:pixelsperfield."""

import math

import pytest
import shapely
from conftest import SAMPLE_REFERENCE
from iou_evaluation.core.geometry.pixels import pixels_per_field


def test_one_hectare_at_10_m_is_100_pixels():
    square = shapely.box(0, 0, 100, 100)  # 1 ha in EPSG:6933, the equal-area CRS itself
    values = pixels_per_field([square, None], "EPSG:6933", 10.0)
    assert values[0] == pytest.approx(100.0, rel=1e-12)
    assert math.isnan(values[1])


def test_planar_layer_uses_its_own_units():
    assert pixels_per_field([shapely.box(0, 0, 30, 20)], None, 2.0)[0] == pytest.approx(150.0)


@pytest.mark.parametrize("gsd", [0, -1, float("nan"), True, "10"])
def test_gsd_must_be_a_positive_number(gsd):
    with pytest.raises(ValueError, match="gsd_m"):
        pixels_per_field([shapely.box(0, 0, 1, 1)], None, gsd)


# agribound 1.0.1 pixels_per_field(reference, 10.0) on the bundled sample.
AGRIBOUND_PIXELS = {
    "351623000000001": 112.42148347249851,
    "351623000000002": 376.0899584556496,
    "351623000000003": 233.74223349747047,
}


@pytest.mark.parametrize("batch_rows", [1000, 7])  # one batch, or 15 with a short last one
def test_pixelsperfield_algorithm_on_the_sample(ioueval_provider, monkeypatch, batch_rows):
    import processing

    from iou_evaluation.processing_provider import pixels_per_field

    monkeypatch.setattr(pixels_per_field, "WRITE_BATCH_ROWS", batch_rows)
    from qgis.core import QgsProcessingContext, QgsProcessingFeedback, QgsProject

    context = QgsProcessingContext()
    context.setProject(QgsProject.instance())
    result = processing.run(
        "ioueval:pixelsperfield",
        {"INPUT": SAMPLE_REFERENCE, "GSD": 10.0, "OUTPUT": "TEMPORARY_OUTPUT"},
        context=context,
        feedback=QgsProcessingFeedback(),
    )
    layer = result["OUTPUT"]
    assert layer.featureCount() == 100
    values = {f["CSBID"]: f["pixels_per_field"] for f in layer.getFeatures()}
    for csbid, expected in AGRIBOUND_PIXELS.items():
        assert values[csbid] == pytest.approx(expected, rel=1e-6)
    assert sum(values.values()) == pytest.approx(70141.7163013599, rel=1e-6)
