"""IoU values of single pairs and small layers, worked out by hand or from the seeds."""

import math

import numpy as np
import pyproj
import pytest
import shapely
from iou_evaluation.core import evaluate
from iou_evaluation.core.pairs.overlap import overlap_pairs
from iou_evaluation.core.geometry.prepare import prepare_layer


def pair_iou(a, b, crs=None):
    """IoU of two geometries through the same path as evaluate (prepare, then overlap)."""
    ea = pyproj.CRS("EPSG:6933") if crs is not None else None
    crs = pyproj.CRS(crs) if crs is not None else None
    ref = prepare_layer([a], crs, ea, "reference")
    pred = prepare_layer([b], crs, ea, "predicted")
    pairs = overlap_pairs(ref.geometries, ref.area_m2, pred.geometries, pred.area_m2)
    return float(pairs.iou[0]) if pairs.n else 0.0


@pytest.mark.parametrize("s, d", [(8, 1), (8, 2), (10, 3), (128, 1), (100, 50)])
def test_square_offset_along_x_gives_s_minus_d_over_s_plus_d(s, d):
    # intersection s(s - d), union s(s + d) (iou_article.txt, "Small objects")
    iou = pair_iou(shapely.box(0, 0, s, s), shapely.box(d, 0, s + d, s))
    assert iou == pytest.approx((s - d) / (s + d), rel=1e-12)


# The table printed in the IoU article, "Intersection over Union" (3 decimals).
ARTICLE_TABLE = {
    8: (0.778, 0.600, 0.391),
    16: (0.882, 0.778, 0.620),
    32: (0.939, 0.882, 0.784),
    64: (0.969, 0.939, 0.884),
    128: (0.984, 0.969, 0.940),
}


@pytest.mark.parametrize("side", sorted(ARTICLE_TABLE))
def test_article_box_table_is_reproduced(side):
    square = shapely.box(0, 0, side, side)
    got = (
        pair_iou(square, shapely.box(1, 0, side + 1, side)),
        pair_iou(square, shapely.box(2, 0, side + 2, side)),
        pair_iou(square, shapely.box(2, 2, side + 2, side + 2)),
    )
    assert got == pytest.approx(ARTICLE_TABLE[side], abs=5e-4)


def test_square_offset_in_a_projected_crs_keeps_its_planar_iou():
    # 100 m squares in UTM 32N shifted by 20 m: 80/120 up to the (tiny) non-linearity of the
    # UTM -> EPSG:6933 reprojection over 100 m.
    x, y = 500_000, 5_300_000
    a = shapely.box(x, y, x + 100, y + 100)
    b = shapely.box(x + 20, y, x + 120, y + 100)
    assert pair_iou(a, b, "EPSG:32632") == pytest.approx(80 / 120, rel=1e-6)


def test_bow_tie_is_repaired_to_two_triangles_not_crashed():
    bow_tie = shapely.Polygon([(0, 0), (1, 1), (0, 1), (1, 0), (0, 0)])
    result = evaluate([bow_tie], [shapely.box(0, 0, 1, 1)])
    # structure repair keeps both triangles: area 0.5, IoU 0.5/1 (buffer(0) would keep 0.25)
    assert result.per_predicted["area_m2"][0] == pytest.approx(0.5)
    assert result.per_predicted["best_iou"][0] == pytest.approx(0.5)
    assert result.metrics["count_predicted_repaired"] == 1
    assert result.metrics["count_tp"] == 1


def test_over_claiming_prediction_scores_below_a_half_covering_one():
    truth = shapely.box(0, 0, 10, 10)
    spilled = pair_iou(truth, shapely.box(0, 0, 20, 20))  # 100 / 400
    clipped = pair_iou(truth, shapely.box(0, 0, 10, 5))  # 50 / 100
    assert spilled == pytest.approx(0.25)
    assert clipped == pytest.approx(0.5)
    assert spilled < clipped


def test_iou_exactly_at_threshold_matches_despite_rounding():
    # 0.04 / 0.08 computes as 0.4999999999999997 in floating point
    a = shapely.box(0, 0.6, 0.4, 0.8)
    b = shapely.box(0, 0.6, 0.4, 0.7)
    result = evaluate([b], [a], iou_threshold=0.5)
    assert result.metrics["count_tp"] == 1


def test_touching_squares_do_not_match():
    result = evaluate([shapely.box(1, 0, 2, 1)], [shapely.box(0, 0, 1, 1)], iou_threshold=1e-6)
    assert result.metrics["count_tp"] == 0
    assert result.per_reference["n_overlapping_pred"][0] == 0


def test_same_square_in_utm_and_wgs84_has_iou_one():
    # The corners agree exactly; the edges are straight in each layer's own CRS (the seed's
    # rule). A 100 m edge straight in UTM (a geodesic here, on the central meridian) and one
    # straight in lon/lat (along a parallel) part by a sagitta of about L² tan(lat) / 8N =
    # 0.2 mm, so the corner-only square is a slightly different region: 1 - IoU = L tan(lat)
    # / 6N = 2.9e-6 exactly, and our 50 m pieces give 2.2e-6. Same square within 5e-6.
    utm = shapely.Polygon(
        [(500000, 5300000), (500100, 5300000), (500100, 5300100), (500000, 5300100)]
    )
    to_wgs84 = pyproj.Transformer.from_crs("EPSG:32632", "EPSG:4326", always_xy=True)
    wgs84 = shapely.transform(utm, lambda xy: np.column_stack(to_wgs84.transform(*xy.T)))
    result = evaluate(
        [wgs84], [utm], predicted_crs="EPSG:4326", reference_crs="EPSG:32632", iou_threshold=0.99
    )
    assert result.per_reference["iou"][0] == pytest.approx(1.0, abs=5e-6)


def test_geographic_box_iou_uses_equal_area_not_square_degrees():
    # 10° x 60° from the equator and its northern half (30°-60°): on the WGS 84 ellipsoid the
    # area ratio is q(60) - q(30) over q(60) - q(0), with q the authalic function below.
    e2 = 0.00669437999014
    e = math.sqrt(e2)

    def q(lat_deg):
        s = math.sin(math.radians(lat_deg))
        return (1 - e2) * (s / (1 - e2 * s * s) - math.log((1 - e * s) / (1 + e * s)) / (2 * e))

    expected = (q(60) - q(30)) / (q(60) - q(0))
    assert expected == pytest.approx(0.4239, abs=5e-5)
    whole = shapely.box(0, 0, 10, 60)
    north = shapely.box(0, 30, 10, 60)
    assert pair_iou(whole, north, "EPSG:4326") == pytest.approx(expected, rel=1e-6)


def test_a_crs_that_is_not_equal_area_is_reported():
    # Mollweide (ESRI:54009) is spherical: on WGS 84 coordinates it changes areas by 0.2-0.3 %
    # in New Mexico (the agribound seed); CONUS Albers (EPSG:5070) is equal-area there.
    field = [shapely.box(-103.45, 35.81, -103.44, 35.82)]
    mollweide = evaluate(field, field, predicted_crs="EPSG:4326", reference_crs="EPSG:4326",
                         equal_area_crs="ESRI:54009")
    assert len(mollweide.warnings) == 1 and "ESRI:54009" in mollweide.warnings[0]
    albers = evaluate(field, field, predicted_crs="EPSG:4326", reference_crs="EPSG:4326",
                      equal_area_crs="EPSG:5070")
    assert albers.warnings == []
    with pytest.raises(ValueError, match="equal_area_crs"):
        evaluate(field, field, predicted_crs="EPSG:4326", reference_crs="EPSG:4326",
                 equal_area_crs="EPSG:4326")


def test_a_prediction_inside_its_reference_overlaps_it_by_its_own_area():
    # Strictly inside: no overlay, the prediction's own area (a right triangle with legs 3
    # and 4: 6). Touching the boundary from inside: through the overlay (25).
    reference = shapely.box(0, 0, 10, 10)
    inside = shapely.Polygon([(2, 2), (5, 2), (5, 6), (2, 2)])
    touching = shapely.box(0, 0, 5, 5)
    pairs = overlap_pairs(
        np.array([reference]), np.array([100.0]),
        np.array([inside, touching]), np.array([6.0, 25.0]),
    )
    assert pairs.predicted.tolist() == [0, 1]
    assert pairs.intersection_m2.tolist() == [6.0, 25.0]
    assert pairs.iou.tolist() == [0.06, 0.25]
