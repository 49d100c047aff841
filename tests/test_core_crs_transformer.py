"""crs.transformer: one pyproj Transformer per thread and CRS pair, giving what a new one gives."""

import threading

import numpy as np
import pyproj
from iou_evaluation.core.geometry.crs import transformer


def test_a_thread_gets_the_same_transformer_for_the_same_crss():
    utm, lonlat = pyproj.CRS("EPSG:32613"), pyproj.CRS("EPSG:4326")
    first = transformer(utm, lonlat)
    assert transformer(pyproj.CRS("EPSG:32613"), pyproj.CRS("EPSG:4326")) is first
    assert transformer(lonlat, utm) is not first


def test_threads_do_not_share_a_transformer():
    utm, lonlat = pyproj.CRS("EPSG:32613"), pyproj.CRS("EPSG:4326")
    mine = transformer(utm, lonlat)
    theirs = []
    thread = threading.Thread(target=lambda: theirs.append(transformer(utm, lonlat)))
    thread.start()
    thread.join()
    assert theirs[0] is not mine


def test_a_kept_transformer_maps_points_as_a_new_one_does():
    utm, ease = pyproj.CRS("EPSG:32613"), pyproj.CRS("EPSG:6933")
    x, y = np.array([500_000.0, 612_345.6]), np.array([4_400_000.0, 4_512_345.6])
    transformer(utm, ease)  # kept from before
    kept = transformer(utm, ease).transform(x, y)
    new = pyproj.Transformer.from_crs(utm, ease, always_xy=True).transform(x, y)
    assert np.array_equal(kept, new)
