"""The plugin class QGIS instantiates through classFactory."""

from qgis.core import QgsApplication

from ..processing_provider.provider import IoUEvaluationProvider


class IoUEvaluationPlugin:
    """Registers the ``ioueval`` Processing provider; removes it on unload."""

    def __init__(self, iface=None):
        self.iface = iface
        self.provider = None

    def initProcessing(self):  # noqa: N802 (QGIS API)
        if self.provider is not None:  # QGIS may call this more than once
            return
        self.provider = IoUEvaluationProvider()
        QgsApplication.processingRegistry().addProvider(self.provider)

    def initGui(self):  # noqa: N802
        self.initProcessing()

    def unload(self):
        if self.provider is not None:
            QgsApplication.processingRegistry().removeProvider(self.provider)
            self.provider = None
