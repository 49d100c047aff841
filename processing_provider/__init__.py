"""Processing provider: QGIS layers and parameters in, core calls, sinks and reports out."""
