"""QGIS glue: the plugin class that registers the Processing provider."""
