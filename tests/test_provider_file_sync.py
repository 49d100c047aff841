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


def test_syncing_files_leaves_them_as_they_are_and_skips_what_is_not_a_file(
        tmp_path, monkeypatch):
    import os

    synced = []
    real_fsync = os.fsync

    def fsync(descriptor):
        synced.append(os.readlink(f"/proc/self/fd/{descriptor}"))
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", fsync)
    gpkg, shapefile = tmp_path / "out.gpkg", tmp_path / "out.shp"
    gpkg.write_bytes(b"abc")
    shapefile.write_bytes(b"shp")
    sync_files([gpkg, shapefile, tmp_path / "missing.gpkg", "TEMPORARY_OUTPUT"])
    assert gpkg.read_bytes() == b"abc"
    assert synced == [str(gpkg), str(tmp_path)]  # the GeoPackage and its folder, once each


def test_the_algorithms_geopackage_outputs_are_synced_once_complete(
        ioueval_provider, tmp_path, monkeypatch):
    import gc
    import sqlite3

    import processing
    from conftest import SAMPLE_PREDICTED, SAMPLE_REFERENCE
    from qgis.core import QgsProcessingContext, QgsProcessingFeedback, QgsProject

    from iou_evaluation.processing_provider import evaluate_polygons

    synced = []

    def record(paths):
        paths = list(paths)
        for path in paths:  # complete when synced: closed, indexed, styled
            db = sqlite3.connect(path)
            try:
                assert db.execute("select count(*) from layer_styles").fetchone()[0] == 1
            finally:
                db.close()
        synced.extend(paths)

    monkeypatch.setattr(evaluate_polygons, "sync_files", record)
    outputs = {name: str(tmp_path / f"{name.lower()}.gpkg")
               for name in ("TRUE_POSITIVES", "FALSE_POSITIVES", "FALSE_NEGATIVES")}
    context = QgsProcessingContext()
    context.setProject(QgsProject.instance())
    result = processing.run("ioueval:evaluatepolygons", {
        "PREDICTED": SAMPLE_PREDICTED, "REFERENCE": SAMPLE_REFERENCE, **outputs,
    }, context=context, feedback=QgsProcessingFeedback())
    assert sorted(synced) == sorted(outputs.values())
    assert (result["COUNT_TP"], result["COUNT_FP"], result["COUNT_FN"]) == (85, 15, 15)
    assert gdal.GetThreadLocalConfigOption(SYNC_OPTION, None) is None
    # The context's layers are freed now, while QGIS runs: Processing's Python side may
    # hold the context in reference cycles that the collector would otherwise free only at
    # exit, after QGIS has shut GDAL down (a crash there).
    del context
    gc.collect()
