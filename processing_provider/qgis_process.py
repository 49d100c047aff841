"""What differs when the plugin runs inside ``qgis_process`` (the command-line entry point):

- the help is printed in a terminal, so it is given as plain text (help_text.html_to_text),
  not as the toolbox's HTML;
- ``qgis_process run`` loads every input layer itself before the algorithm's first method is
  called, and keeps it open until the process ends. Loading a raster makes QGIS compute band
  statistics to style it, and GDAL saves them as ``<raster>.aux.xml`` beside the input when
  the dataset closes (its PAM, "persistent auxiliary metadata"). So when the command runs one
  of this provider's algorithms, GDAL's PAM is switched off (configuration option
  ``GDAL_PAM_ENABLED=NO``) from the moment the provider loads until the algorithm starts
  (``release_inputs``): the datasets qgis_process opened in between never write beside their
  file (PAM is decided once per dataset, when GDAL first reads its metadata), and the
  algorithm's own reads see any ``.aux.xml`` that was there (a raster attribute table, say).

PAM does not cover a ``.vrt``: GDAL's VRT driver writes changed metadata into the .vrt itself.
So the provider's raster parameters do not let qgis_process load a raster file as a layer at
all (raster_inputs.RasterFileParameter); the PAM switch above still covers what it loads
otherwise.

Nothing changes for other commands (``help``, ``list``, another provider's algorithm) or
outside qgis_process.
"""

from __future__ import annotations

from qgis.core import QgsApplication
from qgis.PyQt.QtCore import QCoreApplication

#: The provider id whose algorithms ``hold_inputs_for_run`` protects.
PROVIDER_ID = "ioueval"
_PAM = "GDAL_PAM_ENABLED"
#: The configuration option's value before ``hold_inputs_for_run`` set it (None: unset).
_held = []


def in_qgis_process() -> bool:
    """Whether this process is qgis_process (QGIS's platform name for it)."""
    return QgsApplication.platform() == "qgis_process"


def algorithm_run(arguments=None) -> str | None:
    """The algorithm id a ``qgis_process run ALGORITHM ...`` command runs, or None for any
    other command. ``arguments``: the command line (default: this process's)."""
    words = list(QCoreApplication.arguments() if arguments is None else arguments)[1:]
    if "run" not in words:
        return None
    after = words[words.index("run") + 1:]
    return next((word for word in after if not word.startswith("-")), None)


def hold_inputs_for_run(arguments=None) -> bool:
    """Switch GDAL's PAM off while qgis_process loads the inputs of one of this provider's
    algorithms (call when the provider loads). Returns whether it did."""
    if _held or not in_qgis_process():
        return False
    algorithm = algorithm_run(arguments) or ""
    if not algorithm.startswith(PROVIDER_ID + ":"):
        return False
    from osgeo import gdal

    _held.append(gdal.GetConfigOption(_PAM))
    gdal.SetConfigOption(_PAM, "NO")
    return True


def release_inputs() -> None:
    """Give GDAL's PAM back its setting (from the algorithm's first method); a no-op when
    ``hold_inputs_for_run`` did nothing or was released already."""
    if not _held:
        return
    from osgeo import gdal

    gdal.SetConfigOption(_PAM, _held.pop())
