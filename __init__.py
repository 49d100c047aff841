"""IoU Evaluation: a QGIS Processing plugin that scores predicted polygons against a reference."""


def classFactory(iface):  # noqa: N802 (QGIS API)
    from .plugin.plugin import IoUEvaluationPlugin

    return IoUEvaluationPlugin(iface)
