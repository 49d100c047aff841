"""A field crossing the antimeridian: correct areas, IoU and boundary distances."""

import math

import pyproj
import pytest
import shapely
from iou_evaluation.core import evaluate

# 0.02° x 0.02° at 17° S (Fiji), written with longitudes wrapping from 179.99 to -179.99
REFERENCE = shapely.Polygon([(179.99, -17.0), (-179.99, -17.0), (-179.99, -16.98), (179.99, -16.98)])
# the same field 0.0001° further east
PREDICTED = shapely.Polygon(
    [(179.9901, -17.0), (-179.9899, -17.0), (-179.9899, -16.98), (179.9901, -16.98)]
)


def test_a_field_across_the_antimeridian_is_measured_where_it_is():
    result = evaluate(
        [PREDICTED], [REFERENCE], predicted_crs="EPSG:4326", reference_crs="EPSG:4326",
        boundary_tolerance_m=20,
    )
    # geodesic area of the same quadrilateral written with continuous longitudes (pyproj.Geod)
    geod = pyproj.Geod(ellps="WGS84")
    area, _ = geod.polygon_area_perimeter(
        [179.99, 180.01, 180.01, 179.99], [-17.0, -17.0, -16.98, -16.98]
    )
    assert result.per_reference["area_m2"][0] == pytest.approx(abs(area), rel=1e-4)
    # a shift of 0.0001° on a 0.02° square: IoU (0.02 - 0.0001) / (0.02 + 0.0001)
    assert result.metrics["iou_mean"] == pytest.approx(0.0199 / 0.0201, rel=1e-6)
    # the Hausdorff distance is the shift: 0.0001° of longitude at 17° S
    _, _, shift = geod.inv(179.99, -17.0, 179.9901, -17.0)
    assert result.metrics["hausdorff_mean_m"] == pytest.approx(shift, abs=0.5)
    assert result.metrics["utm_epsg_codes"][0] in (32701, 32760)  # a zone at the antimeridian
    assert result.metrics["boundary_recall"] == pytest.approx(1.0)
    assert not math.isnan(result.metrics["boundary_distance_mean_m"])
