"""Styling of output layers: QML styles from resources/, applied on load and stored in files."""

from __future__ import annotations

from pathlib import Path

from qgis.core import QgsProcessingLayerPostProcessorInterface, QgsVectorLayer

from .compat import save_style_to_database

RESOURCES_DIR = Path(__file__).resolve().parent.parent / "resources"
STYLE_DIR = RESOURCES_DIR / "styles"


def style_path(name: str) -> str:
    """Path of a QML style in resources/styles (e.g. "true_positives")."""
    return str(STYLE_DIR / f"{name}.qml")


class StylePostProcessor(QgsProcessingLayerPostProcessorInterface):
    """Applies a QML style to an output layer when QGIS loads it into the project."""

    # Processing keeps only a pointer to the post-processor; Python must keep it alive.
    _instances: dict[str, "StylePostProcessor"] = {}

    def __init__(self, qml_path: str):
        super().__init__()
        self.qml_path = qml_path

    @classmethod
    def for_style(cls, qml_path: str) -> "StylePostProcessor":
        if qml_path not in cls._instances:
            cls._instances[qml_path] = cls(qml_path)
        return cls._instances[qml_path]

    def postProcessLayer(self, layer, context, feedback):  # noqa: N802 (QGIS API)
        if isinstance(layer, QgsVectorLayer):
            layer.loadNamedStyle(self.qml_path)
            layer.triggerRepaint()


def store_style_in_file(destination: str, qml_path: str, feedback) -> None:
    """Make a written output open styled anywhere: a GeoPackage layer gets the style as its
    default in the layer_styles table; other file formats get a .qml file beside them.

    ``destination`` is the sink's destination id (a file path, possibly with |layername=).
    Memory layers are left alone (the post-processor styles them on load).
    """
    path = destination.split("|")[0]
    if not path or not Path(path).is_file():
        return
    layer = QgsVectorLayer(destination, Path(path).stem, "ogr")
    if not layer.isValid():
        return
    layer.loadNamedStyle(qml_path)
    if layer.dataProvider().storageType() == "GPKG":
        error = save_style_to_database(layer, Path(qml_path).stem, "IoU Evaluation style", True)
    else:
        error, ok = layer.saveNamedStyle(str(Path(path).with_suffix(".qml")))
        error = "" if ok else error
    if error:
        feedback.pushWarning(f"Could not store the style in {path}: {error}")
