"""Small helpers for the words of messages."""

from __future__ import annotations


def count_of(n: int, singular: str, plural: str | None = None) -> str:
    """``n`` and the noun that agrees with it: count_of(1, "geometry", "geometries") is
    "1 geometry", count_of(2, "answer") is "2 answers" (plural default: singular + "s")."""
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"
