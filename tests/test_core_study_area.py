"""core.pairs.study_area: the three selection rules, by hand."""

import pytest
import shapely
from shapely.geometry import box

from iou_evaluation.core.pairs.study_area import select_in_study_area, study_area_footprint

AREA = box(0, 0, 10, 10)
ROWS = [
    box(1, 1, 2, 2),  # 0 inside
    box(9, 0, 13, 1),  # 1 crosses the outline, centroid (11, 0.5) outside
    box(8, 8, 11, 9),  # 2 crosses, centroid (9.5, 8.5) inside
    box(10, 5, 11, 6),  # 3 touches the outline only
    box(20, 20, 21, 21),  # 4 outside
    None,  # 5 null: kept, for the evaluation to count
]


@pytest.mark.parametrize(
    "rule, kept",
    [
        ("intersects", [0, 1, 2, 3, 5]),
        ("centroid_within", [0, 2, 5]),
        ("clip", [0, 1, 2, 5]),
    ],
)
def test_rules_keep_these_rows(rule, kept):
    selection = select_in_study_area(ROWS, None, AREA, None, rule)
    assert selection.keep.tolist() == kept
    assert selection.n_outside == len(ROWS) - len(kept)


def test_clip_cuts_rows_at_the_outline():
    selection = select_in_study_area(ROWS, None, AREA, None, "clip")
    areas = [None if g is None else g.area for g in selection.geometries]
    assert areas == [1.0, 1.0, 2.0, None]  # row 1: [9, 10] x [0, 1]; row 2: [8, 10] x [8, 9]
    assert selection.n_clipped == 2
    assert selection.geometries[0] is ROWS[0]  # inside: unchanged


def test_the_study_area_is_reprojected_to_the_layer():
    # The study area in EPSG:4326, the layer in EPSG:6933 where x is proportional to longitude.
    import pyproj

    to_6933 = pyproj.Transformer.from_crs(4326, 6933, always_xy=True)
    x0, y0 = to_6933.transform(10.0, 40.0)
    x1, y1 = to_6933.transform(10.5, 40.5)
    area, crs = study_area_footprint([box(10, 40, 10.25, 41), box(10.25, 40, 11, 41)], 4326)
    assert shapely.area(area) == pytest.approx(1.0)  # two boxes dissolved: 1° x 1°
    inside = box(x0, y0, x1, y1)
    outside = box(x0 - 2e5, y0, x0 - 1e5, y1)
    selection = select_in_study_area([inside, outside], 6933, area, crs, "intersects")
    assert selection.keep.tolist() == [0]


def test_a_bad_study_area_is_a_programmer_error():
    with pytest.raises(ValueError, match="rule"):
        select_in_study_area(ROWS, None, AREA, None, "within")
    with pytest.raises(ValueError, match="all have a CRS or all have none"):
        select_in_study_area(ROWS, None, AREA, 4326, "intersects")


def test_an_empty_study_area_keeps_only_null_rows():
    area, _ = study_area_footprint([None], None)
    assert area is None
    selection = select_in_study_area(ROWS, None, area, None, "intersects")
    assert selection.keep.tolist() == [5]
