"""Reference pixel centres on the predicted grid: GDAL's longitude wrap and the approximate
transform (checked against PROJ for every pixel)."""

from types import SimpleNamespace

import numpy as np
import pyproj
import pytest
from test_core_raster_confusion import run, write_raster

from iou_evaluation.core.classmaps.confusion import class_metrics
from iou_evaluation.core.classmaps.grid_transform import (
    TRANSFORM_ERROR_PX,
    GridTransform,
    longitude_wrap,
)
from iou_evaluation.core.classmaps.rasters import open_band, raster_confusion

pytest.importorskip("osgeo.gdal")


def grid(gt, width, height, crs):
    return SimpleNamespace(geotransform=gt, width=width, height=height,
                           crs=pyproj.CRS(crs) if crs else None)


# --- longitude wrap --------------------------------------------------------------------

def hemispheres(west, east, width=360):
    """One row of 1° pixels: ``west`` on longitudes −180…0, ``east`` on 0…180."""
    return np.array([[west] * (width // 2) + [east] * (width // 2)], np.uint8)


def test_prediction_in_0_360_meets_a_reference_in_minus_180_180(tmp_path):
    reference = hemispheres(1, 2)  # columns from −180°
    predicted = np.roll(reference, -180, axis=1)  # columns from 0°: east first
    result = run(tmp_path, predicted, reference,
                 predicted_raster={"geotransform": (0, 1, 0, 1, 0, -1), "crs": "EPSG:4326"},
                 reference_raster={"geotransform": (-180, 1, 0, 1, 0, -1), "crs": "EPSG:4326"})
    assert result.alignment["reference_valid_outside_prediction"] == 0
    assert class_metrics(result.counts)["iou"].tolist() == [1.0, 1.0]


def test_prediction_in_minus_180_180_meets_a_reference_in_0_360(tmp_path):
    predicted = hemispheres(1, 2)
    reference = np.roll(predicted, -180, axis=1)
    result = run(tmp_path, predicted, reference,
                 predicted_raster={"geotransform": (-180, 1, 0, 1, 0, -1), "crs": "EPSG:4326"},
                 reference_raster={"geotransform": (0, 1, 0, 1, 0, -1), "crs": "EPSG:4326"})
    assert result.alignment["reference_valid_outside_prediction"] == 0
    assert class_metrics(result.counts)["iou"].tolist() == [1.0, 1.0]


def test_wrap_window_is_centred_on_the_prediction_as_gdal_centres_it():
    # GDAL's InsertCenterLong: the middle of the four corners' longitudes, ± 180°.
    assert longitude_wrap(pyproj.CRS("EPSG:4326"), (0, 1, 0, 90, 0, -1), 360, 180)[:2] == (
        0.0, 360.0)
    assert longitude_wrap(pyproj.CRS("EPSG:4326"), (10, 0.5, 0, 50, 0, -0.5), 4, 4)[:2] == (
        -169.0, 191.0)
    assert longitude_wrap(pyproj.CRS("EPSG:4326"), (-200, 1, 0, 90, 0, -1), 400, 180) is None
    assert longitude_wrap(pyproj.CRS("EPSG:3857"), (0, 1, 0, 0, 0, -1), 4, 4) is None


def test_reprojected_reference_west_of_greenwich_meets_a_0_360_prediction(tmp_path):
    # Reference in Web Mercator round 100° W; prediction in lon/lat stored from 0° to 360°.
    x, y = pyproj.Transformer.from_crs("EPSG:4326", "EPSG:3857",
                                       always_xy=True).transform(-100, 40)
    reference = np.ones((20, 20), np.uint8)
    predicted = np.zeros((180, 360), np.uint8)
    predicted[40:60, 255:265] = 1  # 260° = 100° W, round 40° N
    result = run(tmp_path, predicted, reference,
                 predicted_raster={"geotransform": (0, 1, 0, 90, 0, -1), "crs": "EPSG:4326"},
                 reference_raster={"geotransform": (x - 10_000, 1000, 0, y + 10_000, 0, -1000),
                                   "crs": "EPSG:3857"})
    assert result.alignment["reference_valid_outside_prediction"] == 0
    assert result.counts.sum() == 400
    assert class_metrics(result.counts)["iou"][-1] == 1.0


# --- approximate transform ---------------------------------------------------------------

def utm_pair(size=300, pixel=10.0):
    """A reference in EPSG:3035 and a prediction grid in UTM 32N over the same ground."""
    reference = grid((4_000_000.0, pixel, 0, 3_000_000.0, 0, -pixel), size, size, "EPSG:3035")
    x0, y0 = pyproj.Transformer.from_crs("EPSG:3035", "EPSG:32632",
                                         always_xy=True).transform(4_000_000, 3_000_000)
    predicted = grid((x0 - 500, pixel, 0, y0 + 500, 0, -pixel), size + 100, size + 100,
                     "EPSG:32632")
    return reference, predicted


@pytest.mark.parametrize("pair", [
    utm_pair(),
    # Web Mercator across the antimeridian against lon/lat in −180…180: cells across the
    # wrap fail their check and are refined, down to single pixels.
    (grid((19_900_000.0, 2000.0, 0, 2_000_000.0, 0, -2000.0), 150, 100, "EPSG:3857"),
     grid((-180.0, 0.05, 0, 30.0, 0, -0.05), 7200, 1200, "EPSG:4326")),
    # Polar stereographic round the North Pole against lon/lat: singular at the pole.
    (grid((-300_000.0, 5000.0, 0, 300_000.0, 0, -5000.0), 120, 120, "EPSG:3413"),
     grid((-180.0, 0.25, 0, 90.0, 0, -0.25), 1440, 120, "EPSG:4326")),
])
def test_approximate_transform_is_within_its_bound_of_proj_everywhere(pair):
    reference, predicted = pair
    approximate = GridTransform(reference, predicted)
    exact = GridTransform(reference, predicted, max_error_px=0)
    a_col, a_row = approximate.block(0, reference.height)
    e_col, e_row = exact.block(0, reference.height)
    assert (np.isnan(a_col) == np.isnan(e_col)).all()
    finite = ~np.isnan(e_col)
    error = np.maximum(np.abs(a_col - e_col), np.abs(a_row - e_row))[finite]
    assert error.max() <= TRANSFORM_ERROR_PX
    # A pixel takes another predicted pixel only when its centre lies within the error of a
    # predicted pixel's edge.
    moved = (np.floor(a_col) != np.floor(e_col)) | (np.floor(a_row) != np.floor(e_row))
    edge = np.minimum(np.abs(e_col - np.round(e_col)), np.abs(e_row - np.round(e_row)))
    assert (edge[moved & finite] <= TRANSFORM_ERROR_PX).all()
    stats = approximate.stats
    assert stats["interpolated_pixels"] + stats["exact_pixels"] == reference.width * reference.height


def test_approximate_transform_places_few_points_through_proj():
    reference, predicted = utm_pair(size=640)
    approximate = GridTransform(reference, predicted)
    approximate.block(0, 640)
    # 10 × 10 cells of 64 pixels, 9 points each: 900 PROJ points for 409,600 pixels.
    assert approximate.stats["proj_points"] == 900
    assert approximate.stats["exact_pixels"] == 0


def test_reprojected_matrix_with_the_approximate_transform_equals_proj_per_pixel(tmp_path):
    reference, predicted = utm_pair(size=200)
    rng = np.random.default_rng(3)
    ref = np.repeat(np.repeat(rng.integers(0, 4, (20, 20)), 10, 0), 10, 1).astype(np.uint8)
    pred = np.repeat(np.repeat(rng.integers(0, 4, (30, 30)), 10, 0), 10, 1).astype(np.uint8)
    options = dict(
        predicted_raster={"geotransform": predicted.geotransform, "crs": "EPSG:32632"},
        reference_raster={"geotransform": reference.geotransform, "crs": "EPSG:3035"})
    approximate = run(tmp_path, pred, ref, **options)
    exact = run(tmp_path, pred, ref, transform_error_px=0, **options)
    assert approximate.classes.values == exact.classes.values
    # The grids are not aligned: centres within 0.01 pixel of an edge are rare.
    assert np.abs(approximate.counts - exact.counts).sum() <= 2
    assert approximate.alignment["transform"]["max_error_predicted_pixels"] == 0.01
    assert exact.alignment["transform"]["exact_pixels"] == 200 * 200


def test_negative_error_bound_is_refused():
    reference, predicted = utm_pair()
    with pytest.raises(ValueError, match="max_error_px"):
        GridTransform(reference, predicted, max_error_px=-1)


def test_an_engineering_crs_keeps_the_plane_area_in_square_metres(tmp_path):
    # A site grid in feet (no datum: PROJ cannot place it on an ellipsoid). It raised
    # pyproj's CRSError; a pixel of 2 ft x 2 ft is (2 x 0.3048 m)^2 = 0.37161216 m².
    engineering = ('ENGCRS["site",EDATUM["site datum"],CS[Cartesian,2],'
                   'AXIS["x",east,LENGTHUNIT["foot",0.3048]],'
                   'AXIS["y",north,LENGTHUNIT["foot",0.3048]]]')
    from osgeo import gdal

    pixels = np.array([[1, 2], [2, 1]], np.uint8)
    grid = (1000, 2, 0, 5000, 0, -2)
    paths = [write_raster(tmp_path / f"{name}.tif", pixels, grid, crs=None)
             for name in ("p", "r")]
    for path in paths:
        dataset = gdal.Open(path, gdal.GA_Update)
        dataset.SetProjection(engineering)
        dataset = None
    predicted, reference = (open_band(path, 1, name)
                            for path, name in zip(paths, ("PREDICTED", "REFERENCE")))
    result = raster_confusion(predicted, reference)
    assert result.counts.trace() == 4
    assert result.areas_m2.sum() == pytest.approx(4 * (2 * 0.3048) ** 2, rel=1e-12)
    assert any("'site' is a local (engineering) CRS" in w for w in result.warnings)


def test_a_full_disc_prediction_whose_corner_is_off_the_earth_is_scored(tmp_path):
    # An orthographic (full-disc, as a geostationary cloud mask) prediction on a sphere of
    # radius R centred on 30° N 10° E: its grid's corners lie off the Earth. The run raised
    # "cannot convert float NaN to integer" (the grid shift); now every reference centre
    # that the disc shows is scored: those with cos c = sin φ0 sin φ + cos φ0 cos φ
    # cos(λ − λ0) > 0 (Snyder 1987, "Map Projections: A Working Manual", eq. 5-3).
    radius = 6378137.0
    ortho = f"+proj=ortho +lat_0=30 +lon_0=10 +R={radius} +units=m +no_defs"
    predicted = write_raster(tmp_path / "p.tif", np.ones((200, 200), np.uint8),
                             (-radius, radius / 100, 0, radius, 0, -radius / 100), crs=ortho)
    reference = write_raster(tmp_path / "r.tif", np.ones((180, 360), np.uint8),
                             (-180, 1, 0, 90, 0, -1), crs="+proj=longlat +R=6378137 +no_defs")
    result = raster_confusion(open_band(predicted, 1, "PREDICTED"),
                              open_band(reference, 1, "REFERENCE"))
    lon, lat = np.meshgrid(np.radians(np.arange(360) - 179.5), np.radians(89.5 - np.arange(180)))
    phi0, lam0 = np.radians(30), np.radians(10)
    cos_c = np.sin(phi0) * np.sin(lat) + np.cos(phi0) * np.cos(lat) * np.cos(lon - lam0)
    assert result.counts.sum() == np.count_nonzero(cos_c > 0)
    assert result.alignment["subpixel_shift_reference_pixels"] is None
