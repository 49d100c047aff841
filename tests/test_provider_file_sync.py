"""New GeoPackage outputs skip SQLite's disk sync per transaction, on the writing thread only,
and are synced once when complete (processing_provider.file_sync)."""

import threading

from osgeo import gdal, ogr

from iou_evaluation.processing_provider.file_sync import SYNC_OPTION, sync_files, unsynced_sqlite


def _synchronous(path):
    """SQLite's own report of the sync level of a connection that GDAL opens to update a
    GeoPackage (as QGIS does to fill an output and to store its style): 0 OFF, 2 FULL.
    (GDAL creates a new file with the syncs off and reopens it with SQLite's default.)"""
    dataset = ogr.GetDriverByName("GPKG").CreateDataSource(str(path))
    dataset.CreateLayer("t", geom_type=ogr.wkbPolygon)
    dataset = None
    dataset = ogr.Open(str(path), update=1)
    result = dataset.ExecuteSQL("PRAGMA synchronous")
    level = result.GetNextFeature().GetField(0)
    dataset.ReleaseResultSet(result)
    dataset = None
    return level


def test_a_geopackage_opened_inside_skips_the_syncs_and_one_outside_keeps_them(tmp_path):
    default = _synchronous(tmp_path / "before.gpkg")
    assert default == 2  # SQLite's default, FULL
    with unsynced_sqlite():
        assert _synchronous(tmp_path / "inside.gpkg") == 0
        elsewhere = []
        thread = threading.Thread(target=lambda: elsewhere.append(
            _synchronous(tmp_path / "other_thread.gpkg")))
        thread.start()
        thread.join()
        assert elsewhere == [default]  # another thread keeps its setting
    assert _synchronous(tmp_path / "after.gpkg") == default
    assert gdal.GetThreadLocalConfigOption(SYNC_OPTION, None) is None


def test_disabled_it_changes_nothing_and_a_setting_of_the_callers_comes_back(tmp_path):
    with unsynced_sqlite(enabled=False):
        assert _synchronous(tmp_path / "a.gpkg") == 2
    gdal.SetThreadLocalConfigOption(SYNC_OPTION, "NORMAL")
    try:
        with unsynced_sqlite():
            assert _synchronous(tmp_path / "b.gpkg") == 0
        assert gdal.GetThreadLocalConfigOption(SYNC_OPTION, None) == "NORMAL"
    finally:
        gdal.SetThreadLocalConfigOption(SYNC_OPTION, None)


def test_syncing_files_leaves_them_as_they_are_and_skips_what_is_not_a_file(tmp_path):
    path = tmp_path / "out.gpkg"
    path.write_bytes(b"abc")
    sync_files([path, tmp_path / "missing.gpkg", "TEMPORARY_OUTPUT"])
    assert path.read_bytes() == b"abc"
