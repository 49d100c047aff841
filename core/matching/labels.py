"""Class and group labels: normalising them and deciding which pairs may match.

Groups (image or tile ids) restrict matching to the same group. Classes follow GroundSet's
taxonomy-aware rule (Ferrod et al. 2026, "GroundSet", arXiv:2603.14609): a prediction may match
a reference whose class equals its own or is an ancestor of it ("a valid child class answers a
query for its parent"). Class names follow one rule everywhere (matching, per-class counts,
average precision, the taxonomy, polygon and raster class maps): Unicode normalisation form C
(NFC: "Forêt" typed as one character or as "e" and a combining accent is one class), then
surrounding spaces stripped, then Unicode caseless matching (``str.casefold``: "STRASSE" and
"straße" are one class). Group labels take the same rule without the casefold. The missing
class (None, NaN, NULL, blank text) is ``MISSING`` = "", which no real class can be after
stripping.
"""

from __future__ import annotations

import unicodedata

import numpy as np

from ..util.checks import is_missing

#: Label of a missing class or group value: it only pairs with another missing value. No
#: real label can be "" (labels are stripped, and blank text is missing), so it cannot collide.
MISSING = ""


#: Methods of Qt's date and time values (QDateTime, QDate, QTime, duck-typed: core never
#: imports qgis) that give Python's ``datetime`` objects.
_PY_DATE_METHODS = ("toPyDateTime", "toPyDate", "toPyTime")


def label_text(value, *, casefold: bool) -> str:
    """The one normalised form of a label: numbers as text (12, 12.0 and "12" are "12"),
    dates and times (Python's or Qt's, from a date field) as ISO 8601 text ("2020-01-01"),
    then NFC, then stripped, then (``casefold``) casefolded; missing values (None, NaN,
    NULL, blank) ``MISSING``."""
    if is_missing(value):
        return MISSING
    for method in _PY_DATE_METHODS:  # a QDate, QDateTime or QTime from a date field
        convert = getattr(value, method, None)
        if callable(convert):
            value = convert()  # datetime.date etc.: str() is ISO 8601, "2020-01-01"
            break
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = int(value)  # 12.0, np.float32(12) -> "12"
    text = unicodedata.normalize("NFC", str(value)).strip()
    return text.casefold() if casefold else text


def class_key(value) -> str:
    """The one normalised form of a class label (``label_text`` with the casefold): NFC,
    stripped, casefolded; numbers as text; missing values ``MISSING``."""
    return label_text(value, casefold=True)


def normalise_labels(values, *, case_insensitive: bool) -> np.ndarray:
    """Object array of text labels: 12, 12.0 and "12" become "12"; None/NaN/NULL become "".

    ``values``: sequence, shape (n,). Labels are NFC-normalised and stripped; class names
    (``case_insensitive``) are also casefolded (``class_key``). Blank text is missing, like
    None.
    """
    out = np.empty(len(values), dtype=object)
    for k, value in enumerate(values):
        out[k] = label_text(value, casefold=case_insensitive)
    return out


_TRUE_TEXT = frozenset({"1", "true", "t", "yes", "y"})


def is_true(value) -> bool:
    """Truth of a flag attribute: non-zero numbers, True, and "1/true/t/yes/y" (any case);
    missing values and every other text are false."""
    if is_missing(value):
        return False
    if isinstance(value, str):
        return value.strip().lower() in _TRUE_TEXT
    try:
        return bool(value)
    except (TypeError, ValueError):
        return False


def ancestors_from_taxonomy(taxonomy: dict | None) -> dict[str, frozenset[str]]:
    """All ancestors of each class from a mapping child → parent (or list of parents).

    Names are normalised by ``class_key`` (stripped, casefolded). Raises ValueError (naming
    TAXONOMY) for a value that is not a name or list of names, and for a cycle (a class that
    would be its own ancestor).
    """
    if not taxonomy:
        return {}
    parents: dict[str, set[str]] = {}
    for child, parent in taxonomy.items():
        if isinstance(parent, str):
            parent = [parent]
        if not isinstance(parent, (list, tuple)) or not all(isinstance(p, str) for p in parent):
            raise ValueError(
                f"TAXONOMY: the parent of {child!r} must be a class name or a list of class "
                f"names, got {parent!r}"
            )
        parents.setdefault(class_key(child), set()).update(class_key(p) for p in parent)
    ancestors: dict[str, frozenset[str]] = {}
    for start in parents:
        seen: set[str] = set()
        stack = list(parents[start])
        while stack:
            name = stack.pop()
            if name not in seen:
                seen.add(name)
                stack.extend(parents.get(name, ()))
        if start in seen:
            raise ValueError(f"TAXONOMY: the taxonomy has a cycle through {start!r}")
        ancestors[start] = frozenset(seen)
    return ancestors


def compatible_classes(
    predicted_class: np.ndarray, reference_class: np.ndarray, ancestors: dict
) -> np.ndarray:
    """Boolean (n,) mask: may a prediction of ``predicted_class[k]`` match a reference of
    ``reference_class[k]``? True when equal, or the reference's class is an ancestor."""
    same = predicted_class == reference_class
    if not ancestors:
        return same
    out = same.copy()
    for k in np.flatnonzero(~same):  # only differing pairs need the taxonomy
        out[k] = reference_class[k] in ancestors.get(predicted_class[k], ())
    return out
