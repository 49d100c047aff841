"""Geometry-like spans of an answer's text, each as raw numbers (``Raw``): the model token
syntaxes (``readers``), WKT, and JSON values, read in one pass each over the text.

Cost: every scan here is linear in the text. Token syntaxes pair their opening and closing
tags by a merge of two position lists; JSON values are decoded in windows that double while
the value runs past them; a repair of a truncated value costs one pass and is tried a bounded
number of times per answer. A bare list of numbers in prose ("the image is [1920, 1080]") is
a geometry only where the answer is the list (alone on its line, in a code fence or between
tags) or where COORDINATE_FORMAT says so (``prose_numbers=True``).
"""

from __future__ import annotations

import bisect
import json
from collections import deque
import math
import re
import warnings
from dataclasses import dataclass, field

import shapely

#: Words that say "there is nothing" (an answer with no geometry that is not a failure).
NONE_FOUND = re.compile(
    r"\b(none found|no (?:objects?|matches|match|instances?|results?|\w+s) (?:found|detected|"
    r"present|visible|in (?:the|this) image)|not found|nothing (?:found|detected)|"
    r"there (?:is|are) no\b(?! (?:doubt|question|need|way|problem|reason))|cannot find|"
    r"could not find|can't find|did not find|no such (?:object|thing)|there are none|"
    r"does not contain any|none(?! other than)|"
    # "No airplane is visible in the image." (one object, singular)
    r"no \w+ (?:is|are) (?:visible|present|found|detected))\b"
    # the whole answer a short negative: Visual-RFT's detection prompt asks for "No Objects"
    # when the category is absent; a JSON null
    r"|^(?:</?\w{1,20}>|\W)*(?:no objects?|nothing|null)(?:</?\w{1,20}>|\W)*$",
    re.IGNORECASE,
)


@dataclass
class Raw:
    """A span before conversion: numbers in the answer's convention or in its own.

    Attributes:
        kind: "box", "oriented_box", "polygon", "mask", "point", "wkt", "geojson".
        start, end: offsets of the span in the answer.
        numbers: flat list of floats (box x1 y1 x2 y2, point x y, polygon ring x y ...).
        convention: the convention the syntax implies; None: the row's / auto.
        fixed: the convention is fixed by the model's vocabulary (bins): COORDINATE_FORMAT
            does not replace it (a warning says so).
        label: the object label the answer gave.
        angle_deg, turn: an oriented box's rotation and the sense of a positive angle on
            screen ("clockwise" or "counterclockwise").
        obb_form: oriented box numbers: "centre" (cx, cy, w, h) or "corners" (x1 y1 x2 y2).
        geometry: for WKT and GeoJSON, a shapely geometry in raw coordinates.
        mask: base64 PNG inside a Gemini box.
        padded_square: the numbers are fractions of the image padded to a square (Shikra).
        repaired: repairs done; failure: unparseable, with this reason.
        syntax: the reader's name (``readers.REGISTRY``), "json", "wkt".
        note: a reading worth a warning (an ambiguous syntax read one way).
    """

    kind: str
    start: int
    end: int
    numbers: object = None
    convention: str | None = None
    label: str | None = None
    angle_deg: float | None = None
    geometry: object = None
    mask: str | None = None
    obb_form: str = "centre"
    turn: str = "clockwise"
    fixed: bool = False
    padded_square: bool = False
    repaired: list = field(default_factory=list)
    failure: str | None = None
    syntax: str = ""
    note: str = ""


class Claims:
    """Disjoint spans of text already read, sorted: a lookup costs a bisection, so an answer
    of many geometries is read in n log n rather than n² (50 000 WKT points took 2 minutes)."""

    def __init__(self):
        self.starts, self.ends = [], []

    def free(self, start: int, end: int) -> bool:
        k = bisect.bisect_right(self.starts, start)
        if k > 0 and self.ends[k - 1] > start:
            return False
        return k == len(self.starts) or self.starts[k] >= end

    def add(self, start: int, end: int):
        k = bisect.bisect_right(self.starts, start)
        self.starts.insert(k, start)
        self.ends.insert(k, end)

    def spans(self):
        return zip(self.starts, self.ends)


def blank(text: str, spans) -> str:
    """The text with the given (start, end) spans replaced by blanks (offsets kept)."""
    parts, k = [], 0
    for start, end in sorted(spans):
        if start < k:
            start = k
        if end <= start:
            continue
        parts.append(text[k:start])
        parts.append(" " * (end - start))
        k = end
    parts.append(text[k:])
    return "".join(parts)


# --- Numbers --------------------------------------------------------------------------------

#: Minus signs other than ASCII's that models and word processors write: U+2212 MINUS SIGN,
#: U+FE63 SMALL HYPHEN-MINUS, U+FF0D FULLWIDTH HYPHEN-MINUS (float() reads none of them).
MINUS_SIGNS = "\u2212\ufe63\uff0d"
_MINUS = str.maketrans({c: "-" for c in MINUS_SIGNS})
NUMBER = rf"[-+{MINUS_SIGNS}]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_NUMBER = re.compile(NUMBER)
#: The innermost bracketed groups of a body, and an opening bracket left unclosed.
_GROUP = re.compile(r"\[([^\[\]]*)\]|\(([^()]*)\)")


def numbers_in(body: str) -> list:
    """Every number in a body of text, as floats."""
    return [float(v.translate(_MINUS)) for v in _NUMBER.findall(body)]


def number_groups(body: str):
    """(groups, stray): the numbers of each innermost [...] or (...) group of ``body``, and
    the numbers outside every group (a stray value, the tail of a group cut off)."""
    groups, stray, k = [], [], 0
    for match in _GROUP.finditer(body):
        stray += numbers_in(body[k:match.start()])
        inner = match.group(1) if match.group(1) is not None else match.group(2)
        values = numbers_in(inner)
        if values or inner.strip():
            groups.append(values)
        k = match.end()
    stray += numbers_in(body[k:])
    return groups, stray


def short(numbers) -> str:
    text = json.dumps([v if isinstance(v, (int, float)) and math.isfinite(v) else str(v)
                       for v in numbers])
    return text if len(text) <= 60 else text[:57] + "..."


def floats(values):
    try:
        return [float(v) for v in values]
    except (TypeError, ValueError):
        return None


def is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# --- <think> blocks -------------------------------------------------------------------------

_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.IGNORECASE | re.DOTALL)


def outside_think(text: str) -> str:
    """The text with <think>…</think> blocks (an unclosed one runs to the end) blanked out,
    offsets kept."""
    return _THINK.sub(lambda m: " " * len(m.group(0)), text)


def inside_think(text: str) -> str:
    """The text of the <think> blocks only, the rest blanked (offsets kept)."""
    return blank(text, _complement([m.span() for m in _THINK.finditer(text)], len(text)))


def _complement(spans, n):
    out, k = [], 0
    for start, end in spans:
        out.append((k, start))
        k = end
    out.append((k, n))
    return out


# --- WKT ------------------------------------------------------------------------------------

_WKT_START = re.compile(
    r"\b(MULTIPOLYGON|MULTILINESTRING|MULTIPOINT|GEOMETRYCOLLECTION|POLYGON|LINESTRING|POINT)"
    r"\s*(?:Z|M|ZM)?\s*(\(|EMPTY\b)",
    re.IGNORECASE,
)


def wkt_spans(text: str):
    """(start, end) of each WKT geometry: the keyword through its balanced parentheses (an
    unclosed one runs to the end of the text, once)."""
    position = 0
    while True:
        match = _WKT_START.search(text, position)
        if match is None:
            return
        if match.group(2).upper() == "EMPTY":
            yield match.start(), match.end()
            position = match.end()
            continue
        depth, k = 0, match.start(2)
        while k < len(text):
            if text[k] == "(":
                depth += 1
            elif text[k] == ")":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        end = min(k + 1, len(text))
        yield match.start(), end
        position = end


def wkt_raws(text: str, spans) -> list:
    """The Raw of each WKT span, read in one shapely call (a span it cannot read is read
    alone, for its error message)."""
    if not spans:
        return []
    texts = [text[s:e].upper().replace("NAN", "NaN").replace("INF", "inf") for s, e in spans]
    with warnings.catch_warnings():  # an overflowing number is the span's own failure
        warnings.simplefilter("ignore", RuntimeWarning)
        geometries = shapely.from_wkt(texts, on_invalid="ignore")
    return [Raw("wkt", s, e, geometry=g, syntax="wkt") if g is not None else wkt_raw(text, s, e)
            for (s, e), g in zip(spans, geometries.tolist())]


def wkt_raw(text: str, start: int, end: int) -> Raw:
    span = text[start:end]
    try:
        geometry = shapely.from_wkt(span.upper().replace("NAN", "NaN").replace("INF", "inf"))
    except (shapely.errors.ShapelyError, ValueError) as exc:
        return Raw("wkt", start, end, failure=f"WKT could not be read ({str(exc)[:120]})",
                   syntax="wkt")
    return Raw("wkt", start, end, geometry=geometry, syntax="wkt")


# --- JSON -----------------------------------------------------------------------------------

_DECODER = json.JSONDecoder()
#: What may follow "[" or "{" (after blanks) in JSON or in the slips ``lenient`` repairs.
_JSON_AFTER = {"[": set('[{"]-0123456789tfnNIFT\'.' + MINUS_SIGNS), "{": set('"}\'')}
#: First window of text decoded at a bracket; doubled while the value runs past it.
_DECODE_WINDOW = 4096
#: Repairs tried per answer, and prefixes tried per repair: each costs a pass over the rest
#: of the text, so text full of unclosed brackets stays linear rather than quadratic; the
#: attempts of one answer scan at most twice its length in all.
_REPAIR_ATTEMPTS = 20
_REPAIR_CUTS = 20
TRUNCATED = "truncated JSON repaired (the incomplete tail dropped)"
NO_GEOMETRY_JSON = "JSON without a geometry in a form this tool reads"
MALFORMED = ("malformed JSON repaired (trailing commas, comments, single quotes, Python "
             "literals or Unicode minus signs)")
PROSE_NUMBERS = ("bracketed numbers in prose were not read as geometry (COORDINATE_FORMAT "
                 "auto reads a bare list only where it stands alone)")


class _Brackets:
    """Positions of the next "[" or "{" at or after a position, each character's next
    position kept, so that a scan through the text costs one pass per character."""

    def __init__(self, text: str):
        self.text = text
        self.found = {"[": -2, "{": -2}  # -2: not looked up yet; -1: none left

    def next(self, start: int) -> int:
        positions = []
        for c in "[{":
            p = self.found[c]
            if p == -2 or (0 <= p < start):
                p = self.found[c] = self.text.find(c, start)
            if p >= 0:
                positions.append(p)
        return min(positions) if positions else -1


def _may_start_json(text: str, k: int) -> bool:
    j, n = k + 1, len(text)
    while j < n and text[j] in " \t\r\n":
        j += 1
    return j < n and text[j] in _JSON_AFTER[text[k]]


def decode_at(text: str, k: int):
    """(value, end) of the JSON value starting at k, decoded in a window of the text that
    doubles while the value runs past it. Raises ValueError or RecursionError."""
    window = _DECODE_WINDOW
    while True:
        part = text[k:k + window]
        truncated = k + window < len(text)
        try:
            value, end = _DECODER.raw_decode(part)
            return value, k + end
        except json.JSONDecodeError as exc:
            cut_off = exc.pos >= len(part) - 1 or exc.msg.startswith("Unterminated string")
            if not (truncated and cut_off):
                raise
        window *= 2


def _after_nested(text: str, k: int) -> int:
    depth, in_string, escape = 0, False, False
    for j in range(k, len(text)):
        c = text[j]
        if in_string:
            if escape:
                escape = False
            elif c == "\\":
                escape = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth <= 0:
                return j + 1
    return len(text)


#: The tokens of a JSON-like span that ``lenient`` keeps apart: strings in single or double
#: quotes, and comments (// to the end of the line; /* … */, an unclosed one to the end).
_LENIENT_TOKENS = re.compile(
    r"'((?:[^'\\\n]|\\.)*)'|\"((?:[^\"\\\n]|\\.)*)\"|(//[^\n]*|/\*.*?(?:\*/|\Z))",
    re.DOTALL)
_PY_LITERALS = {"None": "null", "True": "true", "False": "false", "nan": "NaN",
                "inf": "Infinity"}
_PY_LITERAL = re.compile(r"\b(?:None|True|False|nan|inf)\b")


def _lenient_outside(part: str) -> str:
    """Text outside strings and comments: Python literals as JSON's, other minus signs as
    ASCII's, trailing commas gone."""
    part = _PY_LITERAL.sub(lambda m: _PY_LITERALS[m.group(0)], part).translate(_MINUS)
    return re.sub(r",\s*([\]}])", r"\1", part)


def lenient(span: str):
    """A balanced JSON-like span with common slips fixed (trailing commas; comments; Python's
    quotes, None, True, False, nan, inf: a label in double quotes may hold an apostrophe, and
    words inside strings are left as written), decoded; None if it still is not JSON."""
    fixed = lenient_text(span)
    if fixed == span:
        return None
    try:
        return json.loads(fixed)
    except (ValueError, RecursionError):
        return None


def lenient_text(span: str) -> str:
    """The text of ``lenient``'s repairs, not decoded. The strings are set aside (a NUL in
    their place) and the text outside them is fixed in one pass of each pattern, so the cost
    is a few passes over the span."""
    strings, outside, k = [], [], 0
    for match in _LENIENT_TOKENS.finditer(span):
        outside.append(span[k:match.start()])
        k = match.end()
        if match.group(3) is not None:  # a comment
            outside.append(" ")
        elif match.group(1) is not None:
            strings.append(json.dumps(match.group(1).replace("\\'", "'")))
            outside.append("\0")
        else:
            strings.append(match.group(0))  # a JSON string already (it may hold an apostrophe)
            outside.append("\0")
    outside.append(span[k:])
    if "\0" in span:  # the marker cannot be told apart: fix each part on its own
        parts = [_lenient_outside(p) if p != "\0" else p for p in outside]
        pieces = iter(strings)
        fixed = "".join(next(pieces) if p == "\0" else p for p in parts)
    else:
        parts = _lenient_outside("".join(outside)).split("\0")
        fixed = "".join(p + s for p, s in zip(parts, strings + [""]))
    return fixed


def repair_truncated(text: str, start: int):
    """A JSON value starting at ``start`` that the text cuts off: the longest prefix ending
    after a complete element, closed with the brackets still open; or a complete value with
    common slips (``lenient``). (value, end, repair reason) or (None, start, None)."""
    if text[start] not in "[{":
        return None, start, None
    # cuts: after each closed bracket; and before a comma that ends a string value in an
    # object holding a closed list or object already ({"box_2d": [...], "label": "cat", "mask":
    # <cut off>: the label is kept), never inside a list of numbers (a box cut short must not
    # become a point). The open brackets are a linked stack ((closer, rest) pairs) so that a
    # cut keeps them in O(1), and only the last _REPAIR_CUTS cuts are kept: a string of the
    # closers per cut cost time and memory quadratic in text nested ever deeper (1 MB: 9 s).
    node, quote, escape, has_child, last = None, None, False, [], ""
    cuts = deque(maxlen=_REPAIR_CUTS)
    for k in range(start, len(text)):
        c = text[k]
        if quote:
            if escape:
                escape = False
            elif c == "\\":
                escape = True
            elif c == quote or (c == "\n" and quote == "'"):
                quote, last = None, '"'
            continue
        if c == '"' or (c == "'" and not (k > start and text[k - 1].isalnum())):
            quote = c
        elif c in "[{":
            node = ("]" if c == "[" else "}", node)
            has_child.append(False)
        elif c in "]}":
            if node is None or c != node[0]:
                return None, start, None  # malformed, not truncated
            node = node[1]
            has_child.pop()
            if node is None:  # complete yet undecodable: common slips?
                value = lenient(text[start:k + 1])
                return (value, k + 1, MALFORMED) if value is not None else (None, start, None)
            has_child[-1] = True
            cuts.append((k + 1, node))
        elif c == "," and last == '"' and node is not None and node[0] == "}" and has_child[-1]:
            cuts.append((k, node))
        if not c.isspace():
            last = c
    if node is None or not cuts:
        return None, start, None
    # the slips are repaired once, in the pieces between cuts (a cut is never inside a string
    # or a pattern lenient_text fixes), not once per cut: 20 repairs of a 1 MB prefix took 5 s
    cut_list = list(cuts)
    bounds = [start] + [cut for cut, _ in cut_list]
    fixed_pieces = None
    for i in range(len(cut_list) - 1, -1, -1):
        cut, still_open = cut_list[i]
        closers = "".join(_closers(still_open))
        try:
            return json.loads(text[start:cut] + closers), len(text), TRUNCATED
        except RecursionError:
            continue  # nested past the stack: no slip repair reads it either
        except ValueError:
            pass
        if fixed_pieces is None:
            fixed_pieces = [lenient_text(text[a:b]) for a, b in zip(bounds, bounds[1:])]
        fixed = "".join(fixed_pieces[:i + 1])
        if fixed == text[start:cut]:
            continue
        try:
            return json.loads(fixed + closers), len(text), TRUNCATED
        except (ValueError, RecursionError):
            continue
    return None, start, None


def _closers(node):
    """The closing brackets of a linked stack of open brackets, innermost first."""
    while node is not None:
        yield node[0]
        node = node[1]


def load_json(text: str):
    """(value, repair reason or None) of a JSON text; (None, None) if it cannot be read."""
    try:
        return json.loads(text), None
    except RecursionError:
        return None, None
    except ValueError:
        if not text:
            return None, None
        value, _, repaired = repair_truncated(text, 0)
        return value, repaired


def json_values(text: str):
    """Every top-level JSON value ([...] or {...}) of the text, in order: (value, start, end,
    repair reason or None); a value nested past the stack is skipped (its span yielded with
    value ``RecursionError``)."""
    k, repair_attempts, budget = 0, _REPAIR_ATTEMPTS, 2 * len(text)
    brackets = _Brackets(text)
    while True:
        k = brackets.next(k)
        if k < 0:
            return
        if not _may_start_json(text, k):
            k += 1
            continue
        try:
            value, end = decode_at(text, k)
            repaired = None
        except RecursionError:
            end = _after_nested(text, k)
            yield RecursionError, k, end, None
            k = end
            continue
        except ValueError:
            value, end, repaired = None, k, None
            if repair_attempts > 0 and budget > 0:
                repair_attempts -= 1
                budget -= len(text) - k  # an attempt may scan the rest of the text
                value, end, repaired = repair_truncated(text, k)
            if value is None:
                k += 1
                continue
        yield value, k, end, repaired
        k = end


_FENCE_OR_TAG = re.compile(r"```[A-Za-z]*|<[^<>\n]{0,40}>|\bjson\b", re.IGNORECASE)
_WORDY = re.compile(r"[^\W\d_]{2,}")


def standalone(text: str, start: int, end: int, before_limit: int, after_limit: int) -> bool:
    """Whether the value at [start, end) stands alone: no words on its line before or after
    it (code fences, tags such as <answer> and punctuation aside), looking back no further
    than ``before_limit`` and ahead no further than ``after_limit`` (the neighbouring values,
    so that the scan stays linear)."""
    line_start = text.rfind("\n", before_limit, start) + 1 if before_limit < start else start
    line_start = max(line_start, before_limit)
    line_end = text.find("\n", end, after_limit)
    line_end = after_limit if line_end < 0 else line_end
    around = text[line_start:start] + " " + text[end:line_end]
    return _WORDY.search(_FENCE_OR_TAG.sub(" ", around)) is None


def holds_nothing(value) -> bool:
    """A JSON value that says "no geometry": null, an empty list or object, or lists and
    objects whose only containers hold nothing."""
    if value is None:
        return True
    if isinstance(value, list):
        return all(holds_nothing(v) for v in value)
    if isinstance(value, dict):
        containers = [v for v in value.values() if v is None or isinstance(v, (list, dict))]
        return not value or (bool(containers) and all(holds_nothing(v) for v in containers))
    return False


def is_bare_numbers(value) -> bool:
    """A list of numbers or of lists of numbers, with no key saying what it is."""
    if not isinstance(value, list) or not value:
        return False
    return all(is_number(v) or (isinstance(v, list) and all(is_number(c) for c in v))
               for v in value)


__all__ = [
    "Raw", "Claims", "NONE_FOUND", "outside_think", "inside_think", "wkt_spans", "wkt_raw",
    "json_values", "load_json", "lenient", "standalone", "holds_nothing", "numbers_in",
    "number_groups", "blank",
]
