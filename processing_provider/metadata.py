"""The plugin's own metadata (metadata.txt at the plugin root)."""

import configparser
from functools import lru_cache
from pathlib import Path

METADATA_PATH = Path(__file__).resolve().parent.parent / "metadata.txt"


@lru_cache(maxsize=1)
def plugin_version() -> str:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(METADATA_PATH, encoding="utf-8")
    return parser.get("general", "version", fallback="unknown")
