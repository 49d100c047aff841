"""Release thresholds: conditions such as ``f1 >= 0.80; per_size_class.*.recall >= 0.6``
checked against a JSON report (the spatial IoU guide's "release thresholds": a model release
gate or a nightly regression check written as text).

Grammar (no ``eval``: a small tokenizer and parser)::

    conditions := condition { (";" | newline) condition }      empty conditions are skipped
    condition  := path [ "?" ] operator number
    path       := segment { "." segment }
    segment    := name | "*" | '"' text '"' | "'" text "'"
    name       := any text without . " ' * ? ; < > = ! (surrounding spaces removed)
    operator   := ">=" | ">" | "<=" | "<" | "==" | "!="
    number     := a decimal number (1, 0.8, -2.5e-3, inf)

A key is written as the report spells it, in any script and with spaces inside
(``per_class.Forêt dense.iou``); quote it when it holds one of the characters above. Keys are
compared as written, and failing that in Unicode NFC (the composed form), so a key typed in
decomposed form still names it. A path is looked up in the report's ``metrics`` object
first, then from the top level (so both ``f1`` and ``metrics.f1``,
``parameters.iou_threshold`` work). ``*`` stands for every key of an object (or index of a
list) at that level; a key with dots in it (the size class ``0.5-1``) can be quoted, or
written plainly when no shorter key matches. A number in a path indexes a list
(``bootstrap.ci.f1.0`` is the interval's lower bound).

Comparisons allow a relative tolerance of 1e-9 (as the IoU threshold does), so an F1 of
0.7999999999999999 passes ``f1 >= 0.8``. A value that is null in the report (NaN, an
undefined metric such as the IoU of a class absent from both maps) fails its condition, and a
wildcard checks every value it reaches, nulls included: ``per_class.*.iou >= 0.5`` fails on
such a class. A ``?`` after the path skips null values instead (``per_class.*.iou? >= 0.5``):
they are listed as skipped, neither passed nor failed (a condition all of whose values are
skipped checked nothing: ``checked_nothing`` names it). A value that is text, an object or a
list is an error.
"""

from __future__ import annotations

import math
import operator
import unicodedata
from dataclasses import dataclass

#: Relative tolerance of every comparison.
RELATIVE_TOLERANCE = 1e-9

#: Operators, longest first (the tokenizer takes the longest match).
OPERATORS = (">=", "<=", "==", "!=", ">", "<")

#: Characters a plain (unquoted) key cannot hold: quote a key that has one.
_SPECIAL_CHARACTERS = frozenset(".\"'*?;<>=!")
#: After a path: skip the values that are null.
SKIP_NULL = "?"
#: A ``*`` segment of a path.
WILDCARD = object()


@dataclass(frozen=True)
class Condition:
    """One parsed condition.

    Attributes:
        text: the condition as written (surrounding spaces removed).
        path: tuple of segments (str, or ``WILDCARD`` for ``*``).
        operator: one of ``OPERATORS``.
        threshold: the number on the right.
        skip_null: the path ended in ``?``: null values are skipped, not failed.
    """

    text: str
    path: tuple
    operator: str
    threshold: float
    skip_null: bool = False


@dataclass(frozen=True)
class ConditionResult:
    """One checked value: a condition with a wildcard gives one result per key it matches.

    Attributes:
        condition: the condition's text.
        path: the concrete dotted path of the value (wildcards replaced by keys).
        operator, threshold: as in the condition.
        value: the value in the report (float), or None when it is null there.
        passed: whether ``value operator threshold`` holds (False for None, True when
            skipped).
        skipped: the value is null and the condition skips nulls (``?``).
    """

    condition: str
    path: str
    operator: str
    threshold: float
    value: float | None
    passed: bool
    skipped: bool = False


def parse_conditions(text: str) -> list[Condition]:
    """Parse conditions separated by ";" or newlines.

    Raises:
        ValueError: naming the condition and what is wrong with it, or when there is none.
        TypeError: ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise TypeError(f"conditions must be text, got {type(text).__name__}")
    parts = [part.strip() for line in text.splitlines() for part in line.split(";")]
    conditions = [_parse_one(part) for part in parts if part]
    if not conditions:
        raise ValueError("no condition given (write e.g. 'f1 >= 0.8; recall >= 0.7')")
    return conditions


def check_conditions(report: dict, conditions) -> list[ConditionResult]:
    """Check parsed conditions (or their text) against a report.

    Args:
        report: the JSON report as a dict.
        conditions: a list of Condition, or text for ``parse_conditions``.

    Returns:
        One ConditionResult per value checked, in the order of the conditions.

    Raises:
        ValueError: a path that names no key (the message lists the keys there), a wildcard
            that matches nothing, or a value that is not a number.
    """
    if isinstance(conditions, str):
        conditions = parse_conditions(conditions)
    if not isinstance(report, dict):
        raise ValueError("the report must be a JSON object")
    results = []
    for condition in conditions:
        for path, value in _resolve(report, condition):
            number = _as_number(value, condition, path)
            skipped = number is None and condition.skip_null
            passed = skipped or (
                number is not None and _holds(number, condition.operator, condition.threshold)
            )
            results.append(
                ConditionResult(
                    condition.text, path, condition.operator, condition.threshold, number,
                    passed, skipped,
                )
            )
    return results


def failure_message(results) -> str:
    """A message listing every failed condition with its value (empty when all passed), e.g.
    "1 of 3 threshold checks failed:" (values skipped as null are not counted)."""
    failed = [r for r in results if not r.passed]
    if not failed:
        return ""
    lines = [
        f"  {r.path} = {'null (undefined)' if r.value is None else _format(r.value)}, "
        f"needs {r.operator} {_format(r.threshold)}  [{r.condition}]"
        for r in failed
    ]
    checked = sum(not r.skipped for r in results)
    verb = "check failed" if checked == 1 else "checks failed"
    return f"{len(failed)} of {checked} threshold {verb}:\n" + "\n".join(lines)


def checked_nothing(results) -> list[str]:
    """The conditions (their text, in order) every one of whose values was skipped as null
    (``?``): they checked nothing, so a gate made of them passes whatever the report holds
    (``per_class.*.iou? >= 0.5`` on a report where no class has an IoU)."""
    seen = {}
    for r in results:
        seen[r.condition] = seen.get(r.condition, True) and r.skipped
    return [condition for condition, skipped in seen.items() if skipped]


def _parse_one(text: str) -> Condition:
    position = _operator_position(text)  # outside quotes: a quoted key may hold "<"
    if position is None and _unclosed_quote(text):
        raise ValueError(f"condition {text!r}: unclosed quote {_unclosed_quote(text)}")
    if position is None:
        raise ValueError(
            f"condition {text!r}: no comparison operator (use one of {', '.join(OPERATORS)})"
        )
    op = next((o for o in OPERATORS if text.startswith(o, position)), None)
    if op is None:
        raise ValueError(
            f"condition {text!r}: {text[position]!r} is not an operator (use one of "
            f"{', '.join(OPERATORS)})"
        )
    left, right = text[:position].strip(), text[position + len(op):].strip()
    skip_null = left.endswith(SKIP_NULL)
    if skip_null:
        left = left[: -len(SKIP_NULL)].rstrip()
    if not left:
        raise ValueError(f"condition {text!r}: no key before {op}")
    try:
        threshold = float(right)
    except ValueError:
        raise ValueError(f"condition {text!r}: {right!r} after {op} is not a number") from None
    if math.isnan(threshold):
        raise ValueError(f"condition {text!r}: the threshold cannot be NaN")
    return Condition(text, _parse_path(left, text), op, threshold, skip_null)


def _operator_position(text: str) -> int | None:
    """Position of the first operator character outside quotes, None if there is none."""
    quote = None
    for k, character in enumerate(text):
        if quote:
            if character == quote:
                quote = None
        elif character in "\"'":
            quote = character
        elif character in "<>=!":
            return k
    return None


def _unclosed_quote(text: str) -> str:
    """The quote character left open in ``text`` ("" when every quote is closed)."""
    quote = ""
    for character in text:
        if quote:
            if character == quote:
                quote = ""
        elif character in "\"'":
            quote = character
    return quote


def _parse_path(text: str, condition: str) -> tuple:
    segments, k = [], 0
    while True:
        while k < len(text) and text[k] == " ":
            k += 1
        if k < len(text) and text[k] in "\"'":
            end = text.find(text[k], k + 1)
            if end < 0:
                raise ValueError(f"condition {condition!r}: unclosed quote in {text!r}")
            segments.append(text[k + 1:end])
            k = end + 1
        elif k < len(text) and text[k] == "*":
            segments.append(WILDCARD)
            k += 1
        else:
            start = k
            while k < len(text) and text[k] not in _SPECIAL_CHARACTERS:
                k += 1
            name = text[start:k].strip()
            if not name:
                found = repr(text[k]) if k < len(text) else "the end"
                raise ValueError(
                    f"condition {condition!r}: a key name was expected in {text!r}, found "
                    f"{found}"
                )
            segments.append(name)
        while k < len(text) and text[k] == " ":
            k += 1
        if k == len(text):
            return tuple(segments)
        if text[k] != ".":
            raise ValueError(
                f"condition {condition!r}: unexpected {text[k]!r} in {text!r} (separate keys "
                "with '.', quote keys that hold one of . \" ' * ? ; < > = !)"
            )
        k += 1


def _resolve(report: dict, condition: Condition) -> list[tuple[str, object]]:
    """[(concrete path, value)] for a condition's path, in the report's metrics first."""
    metrics = report.get("metrics")
    root = report
    if isinstance(metrics, dict) and (
        condition.path[0] is WILDCARD or _has_key(metrics, condition.path)
    ):
        root = metrics
    elif isinstance(metrics, dict) and not _has_key(report, condition.path):
        keys = ", ".join(list(map(str, metrics))[:15]) + (", …" if len(metrics) > 15 else "")
        raise ValueError(
            f"condition {condition.text!r}: no key {condition.path[0]!r} in the report's "
            f"metrics ({keys}) nor at its top level ({', '.join(map(str, report))})"
        )
    found = _walk(root, condition.path, [], condition)
    if not found:
        raise ValueError(f"condition {condition.text!r}: the wildcard matches no value")
    return found


def _has_key(node: dict, path: tuple) -> bool:
    """Whether ``node`` has the first key of ``path`` (also as several segments joined)."""
    return any(
        _key_in(node, ".".join(path[:n])) is not None
        for n in range(1, len(path) + 1)
        if all(s is not WILDCARD for s in path[:n])
    )


def _key_in(node: dict, key: str):
    """The key of ``node`` that ``key`` names: itself, else the one equal to it in Unicode
    NFC (composed form); None when there is none."""
    if key in node:
        return key
    wanted = unicodedata.normalize("NFC", key)
    return next((k for k in node if isinstance(k, str)
                 and unicodedata.normalize("NFC", k) == wanted), None)


def _walk(node, path: tuple, done: list, condition: Condition) -> list:
    if not path:
        return [(".".join(done), node)]
    segment = path[0]
    if segment is WILDCARD:
        if isinstance(node, dict):
            items = list(node.items())
        elif isinstance(node, list):
            items = [(str(k), v) for k, v in enumerate(node)]
        else:
            raise ValueError(
                f"condition {condition.text!r}: '*' after {'.'.join(done) or 'the top'} needs "
                f"an object or a list, found {_kind(node)}"
            )
        return [hit for key, value in items
                for hit in _walk(value, path[1:], done + [str(key)], condition)]
    if isinstance(node, dict):
        # A key with dots in it ("0.5-1") was split into segments: join them back.
        for n in range(1, len(path) + 1):
            if any(s is WILDCARD for s in path[:n]):
                break
            key = _key_in(node, ".".join(path[:n]))
            if key is not None:
                return _walk(node[key], path[n:], done + [key], condition)
        keys = ", ".join(list(map(str, node))[:15]) + (", …" if len(node) > 15 else "")
        where = ".".join(done) or "the report (and its metrics)"
        raise ValueError(
            f"condition {condition.text!r}: no key {segment!r} in {where}; keys there: {keys}"
        )
    if isinstance(node, list):
        try:
            index = int(segment)
            value = node[index]
        except (ValueError, IndexError):
            raise ValueError(
                f"condition {condition.text!r}: {'.'.join(done)} is a list of {len(node)}; "
                f"{segment!r} is not an index in it"
            ) from None
        return _walk(value, path[1:], done + [segment], condition)
    raise ValueError(
        f"condition {condition.text!r}: {'.'.join(done)} is {_kind(node)}, it has no key "
        f"{segment!r}"
    )


def _as_number(value, condition: Condition, path: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, (bool, int, float)):
        number = float(value)
        return None if math.isnan(number) else number
    raise ValueError(
        f"condition {condition.text!r}: {path} is {_kind(value)}, not a number"
    )


def _holds(value: float, op: str, threshold: float) -> bool:
    close = math.isclose(value, threshold, rel_tol=RELATIVE_TOLERANCE, abs_tol=0.0) or (
        value == threshold
    )
    if op == "==":
        return close
    if op == "!=":
        return not close
    if op in (">=", "<="):
        return close or _COMPARE[op](value, threshold)
    return not close and _COMPARE[op](value, threshold)


_COMPARE = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}


def _kind(value) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"text ({value!r})"
    return type(value).__name__


def _format(value: float) -> str:
    return f"{value:.6g}"
