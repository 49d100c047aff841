"""New GeoPackage outputs written without a disk sync at every SQLite transaction, and synced
to disk once when they are complete.

SQLite syncs a database to disk at every commit by default (``PRAGMA synchronous=FULL``):
filling a GeoPackage output, building its spatial index and storing its style takes about a
dozen syncs (50 for ioueval:evaluatepolygons' four outputs), each waiting for the disk (about
4 ms on this project's shared virtual disk with other jobs writing).
An output file that is new and of its own holds nothing that a crash while it is written
could lose: a run cut short leaves an unusable file either way. So its connections skip the
syncs (GDAL's ``OGR_SQLITE_SYNCHRONOUS=OFF``, set for the writing thread only, so that
nothing else GDAL opens meanwhile is affected), and the finished file is synced once
(``sync_files``) before the algorithm reports it written: as durable as before when the run
returns. The bytes written are the same; only when they reach the disk changes.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

#: GDAL configuration option of the SQLite-based drivers (GeoPackage, SQLite).
SYNC_OPTION = "OGR_SQLITE_SYNCHRONOUS"
#: File name suffixes of those drivers' files, the ones ``sync_files`` syncs.
SQLITE_SUFFIXES = (".gpkg", ".sqlite", ".db")


@contextlib.contextmanager
def unsynced_sqlite(enabled: bool = True):
    """Within: SQLite datasets (GeoPackage files) that GDAL opens or creates on this thread
    skip the disk sync of each transaction, for as long as they stay open, wherever they are
    closed. Other threads, and datasets opened outside, keep their setting.

    Only for new files of the caller's own (see the module docstring); ``enabled=False``
    changes nothing. Without GDAL's Python bindings it changes nothing either.
    """
    gdal = _gdal() if enabled else None
    if gdal is None:
        yield
        return
    previous = gdal.GetThreadLocalConfigOption(SYNC_OPTION, None)
    gdal.SetThreadLocalConfigOption(SYNC_OPTION, "OFF")
    try:
        yield
    finally:
        gdal.SetThreadLocalConfigOption(SYNC_OPTION, previous)


def sync_files(paths) -> None:
    """Sync each GeoPackage (or SQLite) file and the folders holding them to disk
    (``os.fsync``): once a file is complete and closed. Paths that are not such files are
    skipped (other formats were never synced); an OSError (a file system without fsync) is
    ignored, as SQLite would have had nothing better to do."""
    folders = set()
    for path in paths:
        path = Path(path)
        if path.suffix.lower() not in SQLITE_SUFFIXES or not path.is_file():
            continue
        _fsync(path, os.O_RDONLY)
        folders.add(path.parent)
    for folder in folders:
        _fsync(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))


def _fsync(path: Path, flags: int) -> None:
    try:
        descriptor = os.open(path, flags)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _gdal():
    try:
        from osgeo import gdal
    except ImportError:
        return None
    return gdal if hasattr(gdal, "SetThreadLocalConfigOption") else None
