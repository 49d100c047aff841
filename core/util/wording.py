"""Small helpers for the words of messages: a count and the noun (and verb) that agree with
it, in messages, logs and report pages alike."""

from __future__ import annotations


def plural(n, singular: str, plural_form: str | None = None) -> str:
    """The form of a word that agrees with the number ``n``: ``singular`` when n is 1,
    else ``plural_form`` (default: singular + "s"). plural(1, "was", "were") is "was",
    plural(0, "field") is "fields". ``n`` may be an int, a float or None (not 1)."""
    return singular if n == 1 else (plural_form or singular + "s")


def count_of(n: int, singular: str, plural_form: str | None = None, *,
             thousands: bool = False) -> str:
    """``n`` and the noun that agrees with it: count_of(1, "geometry", "geometries") is
    "1 geometry", count_of(2, "answer") is "2 answers" (plural default: singular + "s");
    ``thousands``: the number with thousands separators ("1,024 vertices")."""
    number = f"{n:,}" if thousands else f"{n}"
    return f"{number} {plural(n, singular, plural_form)}"
