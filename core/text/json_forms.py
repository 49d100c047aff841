"""Raw geometries of a decoded JSON value: the keys models write (``bbox_2d``, ``box_2d``,
``point_2d``, ``bboxes``, corner keys, centre/size/angle, GeoJSON) and bare lists."""

from __future__ import annotations

import json
import re

import shapely

from ..util.wording import count_of
from .extraction import Raw, floats, is_number, load_json, short

BOX_KEYS = ("bbox_2d", "bbox", "bboxes", "box", "boxes", "bounding_box", "bounding_boxes")
POINT_KEYS = ("point_2d", "points_2d", "points")
POLYGON_KEYS = ("polygon", "polygons", "segmentation", "contour", "mask", "quad_boxes")
OBB_KEYS = ("obb", "rbox", "rotated_box", "oriented_box", "rotated_bbox", "obb_2d", "poly")
LABEL_KEYS = ("label", "class", "category", "name", "object")
_WRAPPERS = ("objects", "detections", "results", "answer", "output", "response", "content")
#: Lists of labels parallel to a list of geometries (one label per geometry, in order), by
#: the geometry key they go with; Florence-2's post_process_generation writes {"bboxes": [...],
#: "labels": [...]} (and "bboxes_labels", "polygons_labels"), Grounding DINO's callers
#: {"boxes": [...], "phrases": [...]}.
_PARALLEL_LABELS = ("labels", "phrases", "classes", "class_names", "names", "categories")
_OWN_PARALLEL_LABELS = {"bboxes": "bboxes_labels", "polygons": "polygons_labels"}
#: Florence-2's task tokens as the keys of its post-processed answers ({"<OD>": {...}}): a
#: wrapper, not a label.
_TASK_KEY = re.compile(r"<[A-Z][A-Z0-9_]*>")
_GEOJSON_TYPES = {
    "point", "multipoint", "linestring", "multilinestring", "polygon", "multipolygon",
    "geometrycollection",
}
#: Keys of a box given by its corners, x1 y1 x2 y2 in that order.
_CORNER_KEYS = (("x1", "y1", "x2", "y2"), ("xmin", "ymin", "xmax", "ymax"),
                ("x_min", "y_min", "x_max", "y_max"), ("left", "top", "right", "bottom"))


class Walk:
    """One JSON value's walk: its text span, the convention its syntax implies, and a cap on
    the depth of JSON found inside strings (JSON stored as a JSON string)."""

    def __init__(self, start, end, convention=None, syntax="json"):
        self.start, self.end, self.convention, self.syntax = start, end, convention, syntax
        self.string_depth = 0

    def raw(self, kind, numbers=None, label=None, **extra) -> Raw:
        return Raw(kind, self.start, self.end, numbers,
                   extra.pop("convention", self.convention), label, syntax=self.syntax,
                   **extra)

    def fail(self, kind, reason) -> Raw:
        return Raw(kind, self.start, self.end, failure=reason, syntax=self.syntax)

    def value(self, value, kind_hint=None, label=None) -> list:
        if isinstance(value, dict):
            return self.obj(value, label)
        if isinstance(value, list):
            return self.list(value, kind_hint, label)
        if isinstance(value, str) and self.string_depth < 2:
            inner = value.strip()
            if inner[:1] in "[{" and inner[-1:] in "]}":  # JSON stored in a JSON string
                decoded, _ = load_json(inner)
                if decoded is not None:
                    self.string_depth += 1
                    try:
                        found = self.value(decoded, kind_hint, label)
                    finally:
                        self.string_depth -= 1
                    for raw in found:
                        raw.repaired.append("JSON read from inside a JSON string")
                    return found
        return []

    def obj(self, obj: dict, label) -> list:
        keys = {str(k).lower(): v for k, v in obj.items()}
        # a label in words or a class number ({"label": 3}: "3"), as a Feature's properties
        label = next((str(keys[k]) for k in LABEL_KEYS if isinstance(keys.get(k), str)
                      or (isinstance(keys.get(k), int) and not isinstance(keys.get(k), bool))),
                     label)
        geo_type = str(keys.get("type", "")).lower()
        if geo_type == "featurecollection":
            out = []
            for feature in keys.get("features") or []:
                out.extend(self.value(feature, label=label))
            return out
        if geo_type == "feature":
            geometry = keys.get("geometry")
            properties = keys.get("properties") if isinstance(keys.get("properties"),
                                                              dict) else {}
            label = next((str(properties[k]) for k in LABEL_KEYS if k in properties), label)
            if geometry is None:
                return [self.fail("geojson", "GeoJSON Feature without geometry")]
            return self.value(geometry, label=label)
        if geo_type in _GEOJSON_TYPES and ("coordinates" in keys or "geometries" in keys):
            try:
                geometry = shapely.geometry.shape({"type": obj.get("type"), **{
                    k: v for k, v in obj.items() if k != "type"}})
            except Exception as exc:  # noqa: BLE001 - shapely raises several types
                return [self.fail("geojson", f"GeoJSON could not be read ({str(exc)[:120]})")]
            return [self.raw("geojson", None, label, convention="geojson", geometry=geometry)]
        if "box_2d" in keys:
            raws = self.convention_list(keys["box_2d"], "normalized_1000_yxyx", "box", label)
            mask = keys.get("mask")
            if isinstance(mask, str) and mask.strip().startswith("data:image/png;base64,"):
                for raw in raws:
                    if raw.failure is None and raw.kind == "box":
                        raw.kind, raw.mask = "mask", mask
            elif isinstance(mask, str) and mask.strip():
                # Gemini 2.5 may answer "<start_of_mask><seg_35><seg_65>…" (google-gemini
                # cookbook issue 798): not a PNG this tool decodes; said, not dropped silently
                for raw in raws:
                    if raw.failure is None:
                        raw.repaired.append(f"the mask is not a base64 PNG "
                                            f"({mask.strip()[:24]!r}…): the box is kept")
            return raws
        if "point" in keys and isinstance(keys["point"], list):
            return self.convention_list(keys["point"], "normalized_1000_yxyx", "point", label)
        for key in OBB_KEYS:
            if key in keys:
                return self.list(keys[key], "oriented_box", label)
        obb = self.centre_size_angle(keys, label)
        if obb is not None:
            return [obb]
        keyed = self.keyed(keys, label)
        if keyed is not None:
            return [keyed]
        out = []
        for key in BOX_KEYS:
            if key in keys:
                out += self.labelled_list(keys, key, "box", label)
        for key in POINT_KEYS:
            if key in keys:
                out += self.labelled_list(keys, key, "point", label)
        for key in POLYGON_KEYS:
            if key in keys and not isinstance(keys[key], str):
                out += self.labelled_list(keys, key, "polygon", label)
        if out or any(k in keys for k in BOX_KEYS + POINT_KEYS + POLYGON_KEYS):
            return out
        for key, value in obj.items():  # a wrapper such as {"objects": [...]} or {"car": [...]}
            if isinstance(value, (dict, list, str)):
                wrapper = str(key).lower() in _WRAPPERS or _TASK_KEY.fullmatch(str(key))
                out += self.value(value, label=label if wrapper else str(key))
        return out

    def labelled_list(self, keys: dict, key: str, kind: str, label) -> list:
        """Raws of the geometries under ``key``, each with its label from a parallel list of
        labels beside it (Florence-2's {"bboxes": [...], "labels": [...]}): one string per
        geometry; an empty string keeps ``label``."""
        value = keys[key]
        labels = next((keys[k] for k in (_OWN_PARALLEL_LABELS.get(key),) + _PARALLEL_LABELS
                       if k is not None and _parallel(keys.get(k), value)), None)
        if labels is None:
            return self.list(value, kind, label)
        out = []
        for item, item_label in zip(value, labels):
            out += self.list(item, kind, item_label.strip()[:200] or label)
        return out

    def convention_list(self, value, convention, kind, label) -> list:
        """Raws of a key whose API fixes the convention (Gemini's box_2d and point: y first,
        0–1000): COORDINATE_FORMAT does not replace it."""
        saved, self.convention = self.convention, convention
        try:
            raws = self.list(value, kind, label)
        finally:
            self.convention = saved
        for raw in raws:
            raw.fixed, raw.syntax = True, "Gemini box_2d / point"
        return raws

    def centre_size_angle(self, keys: dict, label):
        """An oriented box from keys such as cx/cy/w/h/angle or center/size/angle; a negative
        width or height is made positive (status repaired)."""
        angle = next((keys[k] for k in ("angle", "theta", "rotation") if k in keys), None)
        if not is_number(angle):
            return None
        centre = keys.get("center", keys.get("centre"))
        size = keys.get("size")
        if isinstance(centre, list) and isinstance(size, list) and len(centre) == len(size) == 2:
            values = centre + size
        else:
            values = [keys.get(k) for k in ("cx", "cy")] + [
                keys.get("w", keys.get("width")), keys.get("h", keys.get("height"))]
        if not all(is_number(v) for v in values):
            return None
        raw = self.raw("oriented_box", [float(v) for v in values], label,
                       angle_deg=float(angle))
        return raw

    def keyed(self, keys: dict, label):
        """A box from corner keys or a point from {"x": …, "y": …}; a failure for x, y,
        width, height (centre or corner is not stated); None when the keys are none of
        these. Numbers given as strings are read (status repaired)."""
        for names in _CORNER_KEYS:
            if all(n in keys for n in names):
                return self.keyed_numbers([keys[n] for n in names], "box", label)
        if "x" in keys and "y" in keys:
            if any(k in keys for k in ("w", "h", "width", "height")):
                return self.fail("box", "x, y, width, height: whether (x, y) is the centre or "
                                        "the top-left corner is not stated")
            return self.keyed_numbers([keys["x"], keys["y"]], "point", label)
        return None

    def keyed_numbers(self, values, kind, label) -> Raw:
        numbers = floats(values) if all(
            is_number(v) or isinstance(v, str) for v in values) else None
        if numbers is None:
            return self.fail(kind, f"{kind} keys that are not numbers: "
                                   f"{json.dumps(values)[:80]}")
        raw = self.numbers(numbers, kind, label)
        if any(isinstance(v, str) for v in values):
            raw.repaired.append("numbers given as strings")
        return raw

    def list(self, value, kind_hint, label) -> list:
        if not isinstance(value, list):
            if isinstance(value, (dict, str)):
                return self.value(value, kind_hint, label)
            return []
        if not value:
            return []
        some_strings = any(isinstance(v, str) for v in value)
        if some_strings and all(isinstance(v, str) or is_number(v) for v in value) and (
                kind_hint is not None or len(value) >= 4):
            numbers = floats(value)  # {"bbox": ["10", "20", "30", "40"]}
            if numbers is not None:
                raw = self.numbers(numbers, kind_hint, label)
                raw.repaired.append("numbers given as strings")
                return [raw]
        if all(is_number(v) for v in value):
            return [self.numbers([float(v) for v in value], kind_hint, label)]
        if len(value) >= 2 and all(_is_pair(v) for v in value):
            if kind_hint == "point":
                return [self.numbers([float(c) for c in p], "point", label) for p in value]
            flat = [float(c) for pair in value for c in pair]
            if kind_hint == "oriented_box":
                kind = "oriented_box" if len(value) == 4 else "polygon"
            elif kind_hint == "polygon":
                kind = "polygon"
            else:
                kind = "box" if len(value) == 2 else "polygon"
            return [self.numbers(flat, kind, label)]
        out, stray = [], []
        for item in value:
            if isinstance(item, (list, dict)):
                out += self.value(item, kind_hint, label)
            elif is_number(item):
                stray.append(item)  # [245, [234, 543, 542, 244]]: the box is kept
            elif isinstance(item, str) and (kind_hint is None or item.strip()[:1] in "[{"):
                out += self.value(item, kind_hint, label)  # a list of words, or JSON text
            else:
                out.append(self.fail(kind_hint or "box", (
                    f"a list mixing numbers and other values: {json.dumps(value)[:80]}")))
                break
        if stray:
            out.append(self.fail(kind_hint or "box", (
                f"stray number(s) {short(stray)} beside the geometries of the list")))
        return out

    def numbers(self, numbers, kind_hint, label) -> Raw:
        """A flat list of numbers as a box (4), point (2), oriented box (5: cx, cy, w, h,
        angle; 8: four corners) or polygon ring (2n, n >= 3)."""
        n = len(numbers)
        if kind_hint == "oriented_box":
            if n == 5:
                return self.raw("oriented_box", numbers[:4], label, angle_deg=numbers[4])
            if n == 8:
                return self.raw("oriented_box", numbers, label)
            return self.fail("oriented_box", f"an oriented box needs 5 numbers (cx, cy, w, h, "
                                             f"angle) or 8 (4 corners), got {n}")
        if kind_hint == "point" or (kind_hint is None and n == 2):
            if n == 2:
                return self.raw("point", numbers, label)
            return self.fail("point", f"a point needs 2 numbers, got {n}")
        if kind_hint == "polygon" and n < 6:
            return self.fail("polygon", f"a polygon needs at least 3 points (6 numbers), got "
                                        f"{count_of(n, 'number')} {short(numbers)}")
        if n == 4 and kind_hint in (None, "box"):
            return self.raw("box", numbers, label)
        if n >= 6 and n % 2 == 0 and kind_hint in (None, "polygon", "box"):
            return self.raw("polygon", numbers, label)
        return self.fail(kind_hint or "box", (
            f"{count_of(n, 'number')} {short(numbers)}: neither a box (4), a point (2) nor a "
            f"polygon ring "
            f"(2n, n >= 3)"))


def _parallel(labels, value) -> bool:
    """Whether ``labels`` is a list of strings, one per geometry of ``value`` (a list of
    lists or objects)."""
    return (isinstance(labels, list) and isinstance(value, list) and len(labels) == len(value)
            and len(value) > 0 and all(isinstance(v, str) for v in labels)
            and all(isinstance(v, (list, dict)) for v in value))


def _is_pair(v) -> bool:
    return isinstance(v, list) and len(v) == 2 and all(is_number(c) for c in v)


def value_raws(value, start, end, convention=None, syntax="json") -> list:
    """Raw spans of a decoded JSON value (all with the value's text span); RecursionError
    becomes a failure."""
    walk = Walk(start, end, convention, syntax)
    try:
        return walk.value(value)
    except RecursionError:
        return [walk.fail("box", "JSON nested too deeply to read")]


__all__ = ["value_raws", "Walk"]
