"""One reader per model syntax, in a registry: a new model is a pattern, a function and a test.

A reader finds its spans in the answer (``find(text)`` yields (start, end, raws)), each raw
with the convention the model's own source documents. Readers run in ``REGISTRY`` order on
the text earlier readers did not claim; WKT and JSON are read after them (``answers``).

Every ``find`` is linear in the text: tag syntaxes pair opening and closing tags by merging
their position lists (an unclosed tag's body runs to the next opening tag of its kind, so the
bodies never overlap), and the patterns of the others cannot backtrack past their next "<",
"[" or "{".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import shapely

from ..util.wording import count_of
from .extraction import Raw, load_json, number_groups, numbers_in, short
from .json_forms import value_raws


@dataclass(frozen=True)
class Reader:
    """A model syntax.

    Attributes:
        name: short name (the ``syntax`` of its records).
        models: the models that write it.
        convention: the convention its source documents (a ``conventions.CONVENTIONS`` key).
        source: where the syntax and convention are documented (title or repository file).
        find: callable(text) -> iterable of (start, end, list of Raw).
        fixed: the convention is fixed by the model's vocabulary (bins): COORDINATE_FORMAT
            does not replace it.
    """

    name: str
    models: str
    convention: str
    source: str
    find: Callable
    fixed: bool = False


# --- Tags -----------------------------------------------------------------------------------

def tag_spans(text: str, open_tag: str, close_tag: str):
    """(start, body_start, body_end, end, closed) of every ``open_tag … close_tag`` span, in
    order; an opening tag without its closing tag before the next opening tag is unclosed:
    its body is the numbers that follow it, up to that next opening tag at most (prose after
    them is left to other readers). One pass over each tag's positions."""
    opens = [m.start() for m in re.finditer(re.escape(open_tag), text)]
    if not opens:
        return []
    closes = [m.start() for m in re.finditer(re.escape(close_tag), text)]
    out, j = [], 0
    for i, start in enumerate(opens):
        body_start = start + len(open_tag)
        limit = opens[i + 1] if i + 1 < len(opens) else len(text)
        while j < len(closes) and closes[j] < body_start:
            j += 1
        if j < len(closes) and closes[j] < limit:
            out.append((start, body_start, closes[j], closes[j] + len(close_tag), True))
            j += 1
        else:  # the numbers that follow (an answer cut off), not the prose after them
            body_end = _NUMERIC_BODY.match(text, body_start, limit).end()
            out.append((start, body_start, body_end, body_end, False))
    return out


#: The body of an unclosed tag: numbers, separators and brackets only.
_NUMERIC_BODY = re.compile(r"[\s\d.,;:+\-eE\[\]()]*")


_CHAIN_GAP = re.compile(r"[\s,;:.]*")


def labelled(text: str, spans, refs):
    """Each span of ``spans`` ((start, ..., end, ...) tuples) with its label: the text of the
    ``refs`` span (same tuple shape) just before it, or of the ref before a chain of spans
    separated only by blanks and punctuation (``<ref>cars</ref><box>…</box><box>…</box>``:
    both boxes are cars)."""
    events = sorted([(s[0], 1, s) for s in spans] + [(r[0], 0, r) for r in refs])
    label, chain_end, out = None, -1, []
    for _, is_span, item in events:
        start, end = item[0], item[3]
        if not is_span:
            body = text[item[1]:item[2]].strip()
            label, chain_end = (body[:200] or None), end
            continue
        if label is not None and chain_end >= 0 and _CHAIN_GAP.fullmatch(text, chain_end, start):
            out.append((item, label))
        else:
            out.append((item, None))
            label = None
        chain_end = end
    return out


def _per(numbers, size, kind, start, end, convention, label, what):
    """Groups of ``size`` numbers as raws of ``kind``; a count that is not a multiple of size
    (or none) is one failure."""
    if not numbers or len(numbers) % size:
        return [Raw(kind, start, end, failure=(
            f"{what} needs {size} numbers a {kind}, found {count_of(len(numbers), 'number')} "
            f"{short(numbers)}"))]
    return [Raw(kind, start, end, numbers[k:k + size], convention, label)
            for k in range(0, len(numbers), size)]


def _tag_reader(open_tag, close_tag, ref=None, *, size=4, kind="box",
                convention="normalized_1000", what=None, point=False):
    """``point``: a closed span of exactly 2 numbers is a point (x, y) on the same grid (a
    GUI agent's click target in a box tag); an unclosed one may be a box cut off."""
    what = what or f"{open_tag}…{close_tag}"

    def find(text):
        spans = tag_spans(text, open_tag, close_tag)
        refs = tag_spans(text, *ref) if ref and spans else []
        for item, label in labelled(text, spans, refs):
            start, body_start, body_end, end, closed = item
            body = text[body_start:body_end]
            grid = convention
            if "<" in body and _BIN_TOKENS.fullmatch(body):
                grid = "falcon_bins_1000"  # Falcon: <box><855><297><891><355></box>
            numbers = numbers_in(body)
            if point and closed and len(numbers) == 2:
                raws = [Raw("point", start, end, numbers, grid, label)]
            else:
                raws = _per(numbers, size, kind, start, end, grid, label, what)
            if not closed:
                if raws[0].failure is not None:
                    raws = [Raw(kind, start, end, failure=f"unclosed {open_tag}: {body[:40]!r}")]
                else:
                    for raw in raws:
                        raw.repaired.append(f"unclosed {open_tag} (answer cut off?)")
            yield start, end, raws
    return find


# --- Readers ----------------------------------------------------------------------------------

_ROTATED = re.compile(r"\{\s*<([^<>{}]*)>\s*<([^<>{}]*)>\s*<([^<>{}]*)>\s*<([^<>{}]*)>\s*"
                      r"(?:\|\s*<([^<>{}]*)>\s*)?\}")


def _rotated_numbers(match):
    values = [match.group(k) for k in range(1, 6)]
    try:
        return [float(v) for v in values[:4]], (float(values[4]) if values[4] is not None
                                                else None)
    except ValueError:
        return None, None


def _skysense(text):
    # <rbox>({<cx><cy><w><h>|<θ>}, {…})</rbox>: centre form, percent, mmrotate "oc" angle
    for start, body_start, body_end, end, closed in tag_spans(text, "<rbox>", "</rbox>"):
        raws = []
        for match in _ROTATED.finditer(text, body_start, body_end):
            numbers, angle = _rotated_numbers(match)
            if numbers is None or angle is None:
                raws.append(Raw("oriented_box", start, end, failure=(
                    f"SkySenseGPT rbox needs <cx><cy><w><h>|<θ>: {match.group(0)[:60]!r}")))
                continue
            raws.append(Raw("oriented_box", start, end, numbers, "normalized_100",
                            angle_deg=angle, obb_form="centre", turn="clockwise"))
        if not raws:
            raws = [Raw("oriented_box", start, end, failure=(
                "SkySenseGPT <rbox> without a {<cx><cy><w><h>|<θ>} box"))]
        label = _before_label(text, start)
        for raw in raws:
            raw.label = label
            if not closed:
                raw.repaired.append("unclosed <rbox> (answer cut off?)")
        yield start, end, raws


def _before_label(text, start):
    """SkySenseGPT's "There is 1 ship in the image:" / "There are 3 ships ...": the object."""
    head = text[max(0, start - 120):start]
    match = re.search(r"There (?:is|are) \d+ ([\w ]+?) in the image:?\s*$", head)
    return match.group(1) if match else None


_GEOCHAT_P = re.compile(r"<p>([^<]{0,200})</p>\s*$")


def _geochat(text):
    # GeoChat: [<p>label</p>] {<x1><y1><x2><y2>|<θ>}, percent; the angle turns
    # counter-clockwise on screen (geochat_demo.py, rotate_bbox: cv2.getRotationMatrix2D)
    # boxes chained after one phrase ("<p>planes</p> {…}{…}") all belong to it, as the demo's
    # visualize_all_bbox_together splits "}{" and gives each box the phrase
    chain_end, chain_label = -1, None
    for match in _ROTATED.finditer(text):
        start, end = match.span()
        numbers, angle = _rotated_numbers(match)
        head = _GEOCHAT_P.search(text, max(0, start - 220), start)
        if head:
            label = head.group(1).strip() or None
        elif chain_end >= 0 and _CHAIN_GAP.fullmatch(text, chain_end, start):
            label = chain_label
        else:
            label = None
        chain_end, chain_label = end, label
        if numbers is None:
            yield start, end, [Raw("box", start, end, failure=(
                f"GeoChat box that is not numbers: {match.group(0)[:60]!r}"))]
            continue
        kind = "oriented_box" if angle is not None else "box"
        yield start, end, [Raw(kind, start, end, numbers, "normalized_100", label, angle,
                               obb_form="corners", turn="counterclockwise")]


def _deepseek(text):
    # <|ref|>car<|/ref|><|det|>[[x1, y1, x2, y2], …]<|/det|>, x / 999 (DeepSeek-VL2's
    # serve/app_modules/utils.py, parse_ref_bbox); nested or cut-off lists keep their boxes
    spans = tag_spans(text, "<|det|>", "<|/det|>")
    refs = tag_spans(text, "<|ref|>", "<|/ref|>") if spans else []
    for item, label in labelled(text, spans, refs):
        start, body_start, body_end, end, closed = item
        body = text[body_start:body_end]
        groups, stray = number_groups(body)
        raws = []
        for values in groups:
            if len(values) == 4:
                raws.append(Raw("box", start, end, values, "deepseek_vl2_999", label))
            else:
                raws.append(Raw("box", start, end, failure=(
                    f"DeepSeek-VL2 box needs 4 numbers, found {count_of(len(values), 'number')} "
                    f"{short(values)}")))
        if stray:
            raws.append(Raw("box", start, end, failure=(
                f"DeepSeek-VL2 <|det|>: number(s) outside a complete box {short(stray)}")))
        if not raws:
            raws = [Raw("box", start, end, failure="DeepSeek-VL2 <|det|> holds no box")]
        if not closed:
            for raw in raws:
                raw.repaired.append("unclosed <|det|> (answer cut off?)")
        yield start, end, raws


def _glm(text):
    # GLM-4.1V / 4.5V: <|begin_of_box|>…<|end_of_box|> around a box [x1, y1, x2, y2] (any
    # bracket style) on a 0–1000 grid, or around a plain-text answer (no geometry there)
    for start, body_start, body_end, end, closed in tag_spans(
            text, "<|begin_of_box|>", "<|end_of_box|>"):
        body = text[body_start:body_end]
        stripped = body.strip()
        if stripped[:1] == "{" or (stripped[:1] == "[" and '"' in stripped):
            value, repaired = load_json(stripped)
            if value is not None:
                raws = value_raws(value, start, end, "normalized_1000", "glm")
                for raw in raws:
                    if repaired:
                        raw.repaired.append(repaired)
                yield start, end, raws
                continue
        numbers = numbers_in(body)
        if not numbers:
            yield start, end, []  # a plain-text answer in the box
            continue
        if len(numbers) == 2:
            raws = [Raw("point", start, end, numbers, "normalized_1000")]
        else:
            raws = _per(numbers, 4, "box", start, end, "normalized_1000", None,
                        "GLM <|begin_of_box|>")
        if not closed:
            for raw in raws:
                raw.repaired.append("unclosed <|begin_of_box|> (answer cut off?)")
        yield start, end, raws


#: big_vision's own parser (_SEGMENT_DETECT_RE) allows blanks between the loc and the seg
#: tokens, and writes them: "<loc0000>…<loc1012> <seg114>…<seg097> wall ; …"
_PALIGEMMA = re.compile(
    r"((?:<loc\d{4}>){4})[ \t]*((?:<seg\d{3}>)*)[ \t]*([^;<\n]{0,200})")


def _paligemma(text):
    # PaliGemma: <loc0393><loc0109><loc0859><loc0811> bird ; … (big_vision: / 1024, y first);
    # "segment" answers add 16 <segNNN> tokens, a mask only big_vision's VQ-VAE decoder
    # reads: the box is kept and the reason says so
    for match in _PALIGEMMA.finditer(text):
        numbers = [float(v) for v in re.findall(r"<loc(\d{4})>", match.group(1))]
        label = match.group(3).strip() or None
        raw = Raw("box", match.start(), match.end(), numbers, "normalized_1024_yxyx", label)
        if match.group(2):
            raw.repaired.append("PaliGemma <seg> mask tokens not decoded (they need "
                                "big_vision's VQ-VAE decoder): the box is kept")
        yield match.start(), match.end(), [raw]


_FLORENCE = re.compile(r"(?:<loc_\d+>|<sep>|</?poly>)*<loc_\d+>(?:<loc_\d+>|<sep>|</?poly>)*")


def _florence(text):
    # Florence-2: phrase<loc_x1><loc_y1><loc_x2><loc_y2> a box; 2 tokens a point; more, in
    # pairs, a polygon (<sep> between polygons, <poly>…</poly> around them); bins → centres
    for match in _FLORENCE.finditer(text):
        start, end = match.span()
        offset = max(0, start - 200)
        before = text[offset:start]
        cut = max(before.rfind(">"), before.rfind("<"), before.rfind("\n")) + 1
        label = before[cut:].strip() or None
        label_start = offset + cut + len(before[cut:]) - len(before[cut:].lstrip()) \
            if label else start
        body = match.group(0)
        parts = [numbers_in(p.replace("loc_", "")) for p in re.split(r"<sep>|</?poly>", body)]
        parts = [p for p in parts if p]
        marked = "<sep>" in body or "poly>" in body
        raws = []
        for numbers in parts:
            raws += _florence_part(numbers, marked, label_start, end, label)
        yield label_start, end, raws


def _florence_part(numbers, marked, start, end, label, convention="florence2_loc_1000"):
    n = len(numbers)
    if n == 4 and not marked:
        return [Raw("box", start, end, numbers, convention, label)]
    if n == 2 and not marked:
        return [Raw("point", start, end, numbers, convention, label)]
    if n >= 6 and n % 2 == 0:
        if not marked and n % 4 == 0 and _all_ordered_boxes(numbers):
            ring = shapely.Polygon(list(zip(numbers[0::2], numbers[1::2])))
            if not ring.is_valid or ring.area <= 0:
                # boxes of one phrase (phrase grounding: every 4 tokens a box), whose corners
                # make no polygon
                return [Raw("box", start, end, numbers[k:k + 4], convention, label)
                        for k in range(0, n, 4)]
            raw = Raw("polygon", start, end, numbers, convention, label)
            raw.note = (f"{n} loc tokens read as one polygon; they could also be {n // 4} "
                        f"boxes of one phrase (phrase grounding)")
            return [raw]
        return [Raw("polygon", start, end, numbers, convention, label)]
    return [Raw("polygon", start, end, failure=(
        f"{count_of(n, 'bin token')}: neither a box (4), a point (2) nor a polygon (pairs, "
        f"at least 3)"))]


def _all_ordered_boxes(numbers):
    return all(numbers[k] <= numbers[k + 2] and numbers[k + 1] <= numbers[k + 3]
               for k in range(0, len(numbers), 4))


_KOSMOS2 = re.compile(
    r"(?:<phrase>([^<]{0,200})</phrase>\s*)?(?:<object>)?"
    r"((?:<patch_index_\d{1,4}><patch_index_\d{1,4}></delimiter_of_multi_objects/>)*"
    r"<patch_index_\d{1,4}><patch_index_\d{1,4}>)(?:</object>)?")
#: Kosmos-2's grid: 1024 patch index tokens, 32 a side.
_KOSMOS2_SIDE = 32


def _kosmos2(text):
    # Kosmos-2: <phrase>a snowman</phrase><object><patch_index_0044><patch_index_0863></object>,
    # the upper-left and lower-right cells of a 32 × 32 grid (index = row · 32 + column), as
    # fractions by transformers' processing_kosmos2.py patch_index_to_coordinate (from the
    # unilm kosmos-2 demo): cell centres, or cell edges when both corners share a row or a
    # column (or are one cell); boxes of one phrase split by </delimiter_of_multi_objects/>
    for match in _KOSMOS2.finditer(text):
        start, end = match.span()
        label = (match.group(1) or "").strip() or None
        raws = []
        for pair in match.group(2).split("</delimiter_of_multi_objects/>"):
            first, second = (int(v) for v in re.findall(r"<patch_index_(\d+)>", pair))
            raws.append(Raw("box", start, end, _kosmos2_box(first, second), "normalized_1",
                            label))
        yield start, end, raws


def _kosmos2_box(first, second, side=_KOSMOS2_SIDE):
    cell = 1.0 / side
    (y1, x1), (y2, x2) = divmod(first, side), divmod(second, side)
    if first == second or x1 == x2 or y1 == y2:
        return [x1 * cell, y1 * cell, (x2 + 1) * cell, (y2 + 1) * cell]
    return [(x1 + 0.5) * cell, (y1 + 0.5) * cell, (x2 + 0.5) * cell, (y2 + 0.5) * cell]


_XML_POINT = re.compile(r"<(points?)\b([^<>]*)>([^<]{0,200})(?:</points?>)?", re.IGNORECASE)
_ATTR = re.compile(r'(\w+)\s*=\s*"([^"]*)"')


def _xml_points(text):
    # Molmo: <point x="52.3" y="61.0" alt="dog">dog</point>, <points x1=".." y1=".." …>,
    # percent (Molmo's README); Qwen3-VL writes the same tags on a 0–1000 grid; Molmo2:
    # <points coords="1 1 523 341 2 612 400">dog</points> (image, then index x y, / 1000)
    for match in _XML_POINT.finditer(text):
        attrs = dict(_ATTR.findall(match.group(2)))
        label = attrs.get("alt") or match.group(3).strip() or None
        start, end = match.span()
        if "coords" in attrs:
            yield start, end, _molmo2(attrs["coords"], start, end, label)
            continue
        pairs = []
        if "x" in attrs and "y" in attrs:
            pairs.append((attrs["x"], attrs["y"]))
        k = 1
        while f"x{k}" in attrs and f"y{k}" in attrs:
            pairs.append((attrs[f"x{k}"], attrs[f"y{k}"]))
            k += 1
        if not pairs:
            continue
        raws, values = [], []
        for x, y in pairs:
            try:
                values.append([float(x), float(y)])
            except ValueError:
                raws.append(Raw("point", start, end, failure=f"XML point x={x!r} y={y!r}"))
        # percent (Molmo) unless a value exceeds 100: then Qwen3-VL's 0–1000 grid
        grid = "normalized_1000" if any(v > 100 for xy in values for v in xy) else \
            "normalized_100"
        for xy in values:
            raw = Raw("point", start, end, xy, grid, label)
            if grid == "normalized_1000":
                raw.note = ("XML point values above 100: read on Qwen3-VL's 0–1000 grid, "
                            "not Molmo's percent")
            raws.append(raw)
        yield start, end, raws


def _molmo2(coords, start, end, label):
    raws = []
    for frame in re.split(r"[\t;]", coords):
        values = frame.split()
        if not values:
            continue
        triples = values[1:]
        if not triples or len(triples) % 3:
            raws.append(Raw("point", start, end, failure=(
                f"Molmo2 coords need an image index, then index x y triples: {frame[:60]!r}")))
            continue
        for k in range(0, len(triples), 3):
            try:
                xy = [float(triples[k + 1]), float(triples[k + 2])]
            except ValueError:
                raws.append(Raw("point", start, end, failure=f"Molmo2 point {triples[k:k + 3]}"))
                continue
            raws.append(Raw("point", start, end, xy, "normalized_1000", label))
    return raws


_COGVLM = re.compile(r"\[\[(\d{3},\d{3}(?:,\d{3},\d{3})?(?:;\d{3},\d{3}(?:,\d{3},\d{3})?)*)\]\]")


def _cogvlm(text):
    # CogVLM / CogAgent: [[x1,y1,x2,y2;x1,y1,x2,y2]] (or [[x,y]] points), relative × 1000,
    # zero-padded to three digits (THUDM/CogVLM README, "Format of coordination")
    for match in _COGVLM.finditer(text):
        start, end = match.span()
        raws = []
        for item in match.group(1).split(";"):
            numbers = [float(v) for v in item.split(",")]
            kind = "point" if len(numbers) == 2 else "box"
            raws.append(Raw(kind, start, end, numbers, "normalized_1000"))
        yield start, end, raws


_N = r"\s*(-?\d+(?:\.\d+)?)\s*"
_EARTHDIAL_BOX = rf"\[{_N},{_N},{_N},{_N},{_N}\]"
_EARTHDIAL = re.compile(rf"\[\s*{_EARTHDIAL_BOX}(?:\s*,\s*{_EARTHDIAL_BOX})*\s*\]")
_EARTHDIAL_ONE = re.compile(_EARTHDIAL_BOX)


def _earthdial(text):
    # EarthDial: [[x1, y1, x2, y2, θ]] (and [[…], […]]) on a 0–100 grid, θ in degrees
    # turning counter-clockwise on screen (src/earthdial/eval/rs_detection/eval.py)
    for match in _EARTHDIAL.finditer(text):
        start, end = match.span()
        raws = []
        for box in _EARTHDIAL_ONE.finditer(match.group(0)):
            values = [float(box.group(k)) for k in range(1, 6)]
            raws.append(Raw("oriented_box", start, end, values[:4], "normalized_100",
                            angle_deg=values[4], obb_form="corners", turn="counterclockwise"))
        yield start, end, raws


_D3 = r"[01]\.\d{3}"
_SHIKRA = re.compile(rf"\[({_D3},{_D3},{_D3},{_D3}(?:;{_D3},{_D3},{_D3},{_D3})*)\]")


def _shikra(text):
    # Shikra: [x1,y1,x2,y2;…] with three decimals, fractions of the image padded to a square
    # (mllm/dataset/process_function/box_process_function.py, PlainBoxFormatter; the padding:
    # mllm/dataset/utils/transform.py, expand2square)
    for match in _SHIKRA.finditer(text):
        start, end = match.span()
        raws = [Raw("box", start, end, [float(v) for v in item.split(",")], "normalized_1",
                    padded_square=True) for item in match.group(1).split(";")]
        yield start, end, raws


#: A tag body of bin tokens only (Falcon's <box>, <quad>).
_BIN_TOKENS = re.compile(r"(?:\s*<\d{1,4}>)+\s*")
_FALCON = re.compile(r"(?<![{\w>])(?:<poly>|<sep>)*<\d{1,4}>(?:<\d{1,4}>|<sep>|</?poly>){3,}")


def _falcon(text):
    # Falcon (remote sensing): bare <N> tokens on 1000 bins, read at the bin's centre
    # (inference.py: CoordinatesQuantizer("floor", (1000, 1000)), (N + 0.5) · size / 1000);
    # 4 a box, pairs of more a polygon, <sep> between polygons, <poly>…</poly> around them
    for match in _FALCON.finditer(text):
        start, end = match.span()
        body = match.group(0)
        parts = [numbers_in(p.replace("<", " ").replace(">", " "))
                 for p in re.split(r"<sep>|</?poly>", body)]
        marked = "<sep>" in body or "poly>" in body
        raws = []
        for numbers in (p for p in parts if p):
            raws += _florence_part(numbers, marked, start, end, None, "falcon_bins_1000")
        yield start, end, raws


REGISTRY = (
    Reader("skysensegpt", "SkySenseGPT", "normalized_100",
           "Luo-Z13/SkySenseGPT, Tools/process_data_RS_Object_Detection.py (RBOX_NORM = 100, "
           "mmrotate 'oc' angles)", _skysense),
    Reader("qwen2vl", "Qwen2-VL", "normalized_1000",
           "Qwen2-VL model card (<|box_start|>(x1,y1),(x2,y2)<|box_end|>, 0–1000); a point "
           "<|box_start|>(x,y)<|box_end|> as ms-swift's custom dataset docs write a click",
           _tag_reader("<|box_start|>", "<|box_end|>",
                       ("<|object_ref_start|>", "<|object_ref_end|>"), what="Qwen2-VL box",
                       point=True)),
    Reader("ref_box", "Qwen-VL, InternVL, MiniCPM-V", "normalized_1000",
           "Qwen-VL README (<ref>…</ref><box>(x1,y1),(x2,y2)</box>); InternVL "
           "internvl_chat/eval/refcoco/evaluate_grounding.py (/ 1000); MiniCPM-V "
           "(<box>x1 y1 x2 y2</box>)",
           _tag_reader("<box>", "</box>", ("<ref>", "</ref>"), what="<box>")),
    Reader("quad", "InternVL, MiniCPM-V", "normalized_1000",
           "InternVL internvl_chat/internvl/train/constants.py (<quad>); MiniCPM-V",
           _tag_reader("<quad>", "</quad>", ("<ref>", "</ref>"), size=8, kind="polygon",
                       what="<quad>")),
    Reader("point_tag", "MiniCPM-V", "normalized_1000", "MiniCPM-V (<point>x y</point>)",
           _tag_reader("<point>", "</point>", ("<ref>", "</ref>"), size=2, kind="point",
                       what="<point>")),
    Reader("deepseek_vl2", "DeepSeek-VL2", "deepseek_vl2_999",
           "deepseek-ai/DeepSeek-VL2 README and deepseek_vl2/serve/app_modules/utils.py "
           "(parse_ref_bbox: / 999)", _deepseek),
    Reader("glm_box", "GLM-4.1V, GLM-4.5V", "normalized_1000",
           "zai-org/GLM-V README, Grounding (× 1000; <|begin_of_box|> <|end_of_box|>)", _glm),
    Reader("geochat", "GeoChat", "normalized_100",
           "mbzuai-oryx/GeoChat geochat_demo.py (bounding_box_size = 100; rotate_bbox)",
           _geochat),
    Reader("paligemma", "PaliGemma", "normalized_1024_yxyx",
           "google-research/big_vision PaliGemma README (<locNNNN> / 1024, y first)",
           _paligemma, fixed=True),
    Reader("florence2", "Florence-2", "florence2_loc_1000",
           "Florence-2 processing_florence2.py (CoordinatesQuantizer 'floor': bin centres)",
           _florence, fixed=True),
    Reader("kosmos2", "Kosmos-2", "normalized_1",
           "transformers models/kosmos2/processing_kosmos2.py (patch_index_to_coordinate, "
           "32 × 32 patches; from microsoft/unilm kosmos-2/demo/decode_string.py)", _kosmos2,
           fixed=True),
    Reader("xml_points", "Molmo, Molmo2, Qwen3-VL", "normalized_100",
           "allenai/molmo2 olmo/preprocessing/point_formatter.py (coords, / 1000); Molmo README "
           "(x, y percent)", _xml_points),
    Reader("cogvlm", "CogVLM, CogAgent", "normalized_1000",
           "THUDM/CogVLM README, 'Format of coordination' (× 1000, three digits)", _cogvlm),
    Reader("earthdial", "EarthDial", "normalized_100",
           "hiyamdebary/EarthDial src/earthdial/eval/rs_detection (results/GeoChat.jsonl, "
           "eval.py get_rotated_box_vertices)", _earthdial),
    Reader("shikra", "Shikra", "normalized_1",
           "shikras/shikra mllm/dataset/process_function/box_process_function.py "
           "(PlainBoxFormatter), mllm/dataset/utils/transform.py (expand2square)", _shikra),
    Reader("falcon", "Falcon (remote sensing)", "falcon_bins_1000",
           "lzd19981105/Falcon inference.py (CoordinatesQuantizer 'floor', 1000 bins; "
           "extract_polygons) and eval/src/detection_obb.py (<box>, <quad> bodies)",
           _falcon, fixed=True),
)


def read_syntaxes(text: str, claims) -> list:
    """Raw spans of every registered syntax in ``text``, each span claimed; a reader's span
    that overlaps an earlier reader's is left to it."""
    raws = []
    for reader in REGISTRY:
        for start, end, found in reader.find(text):
            if not claims.free(start, end):
                continue
            claims.add(start, end)
            for raw in found:
                raw.syntax = reader.name
                raw.fixed = reader.fixed
                raws.append(raw)
    return raws


__all__ = ["Reader", "REGISTRY", "read_syntaxes", "tag_spans", "labelled"]
