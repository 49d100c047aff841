"""The plugin class QGIS instantiates through classFactory."""

from qgis.core import QgsApplication

from ..processing_provider.provider import IoUEvaluationProvider


class IoUEvaluationPlugin:
    """Registers the ``ioueval`` Processing provider; removes it on unload."""

    def __init__(self, iface=None):
        self.iface = iface
        self.provider = None

    def initProcessing(self):  # noqa: N802 (QGIS API)
        registry = QgsApplication.processingRegistry()
        # QGIS may call this more than once; and a provider with our id may already be
        # registered (another copy of the plugin): QGIS would reject and delete a second one.
        if self.provider is not None or registry.providerById("ioueval") is not None:
            return
        self.provider = IoUEvaluationProvider()
        registry.addProvider(self.provider)

    def initGui(self):  # noqa: N802
        self.initProcessing()

    def unload(self):
        if self.provider is not None:
            QgsApplication.processingRegistry().removeProvider(self.provider)
            self.provider = None
