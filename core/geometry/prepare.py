"""Prepare one layer's geometries for evaluation: drop unusable rows, repair, reproject.

Order of operations follows the spatial IoU guide ("Measuring Spatial IoU for LLM-Generated
Geometries") and the agribound 1.0 documentation ("Evaluation"):
repair in the source CRS first, then split edges at points of a 50 m grid where their image in
the equal-area CRS bends away from the chord (``core.geometry.densify``: areas within 1e-9 relative of
splitting every edge into 50 m pieces), then reproject to the equal-area CRS (and repair again,
since reprojection can fold a ring), then drop zero areas.

Geographic layers evaluated in a cylindrical equal-area CRS (the default EPSG:6933) can take a
shorter way (``lonlat_area``, which ``evaluate`` uses): they stay in longitude/latitude, where
their edges are straight, and ``core.geometry.exact_area`` measures the image of every edge exactly, so
no edge is split at all (except where a change of datum bends it).

Reprojection passes through longitude/latitude on the equal-area CRS's own datum, where rings
that cross the antimeridian (±180°) are made continuous and cut there, so that a field on the
Fiji or Chukotka side of 180° has its true area (agribound 1.0 left such layers unsupported).
Nothing is counted for it: such a polygon is not wrong. The same step handles polygons that
contain a pole: in longitude/latitude their ring winds once round it, and is closed through the
pole before the cut (a polar stereographic square round the South Pole gets its geodesic area).

**Reading longitude/latitude polygons** (``read_lonlat``; one rule for every algorithm, since
every one prepares its layers here). Edges are straight in longitude/latitude. For each polygon
part:

1. *World-spanning parts.* A part whose longitudes span a full turn to within
   ``FULL_TURN_SNAP_DEG`` (1e-4°) is a drawing across the whole map, as Natural Earth and every
   world layer draw Antarctica (along -180° and 180° down to the pole, and along the pole's
   parallel across the map) and as a cap or a band round the world is drawn flat: longitudes
   within 1e-4° of the map's edges are snapped onto them (180.00000000000014° and
   -180.0000152° become ±180°, 179.99995° becomes 180°). Bound: the part's area moves by at
   most two meridian strips 1e-4° wide over its latitudes (``snap_full_turns``).
2. *The short way.* An edge whose longitudes differ by more than half a turn crosses ±180°
   the short way (a field written from 179° to -179°; an edge from 180° to -180° runs along
   the antimeridian, as world-atlas's TopoJSON cuts Wrangel Island). A ring that then winds
   once round the world encloses the pole nearer its mean latitude and is closed through it
   from its vertex nearest that pole (world-atlas's Antarctica, a ring along its coast).
   Longitudes beyond ±180° (a field written from 179° to 181°) are read modulo a turn.
3. *Drawn across the map.* A part is read as drawn when rule 2 would make it a sliver narrower
   than 1e-4° across ±180° (box(-180, 80, 180, 90) and box(-180, 80, 179.99995, 90): caps
   drawn flat), or when it has an edge of a full turn or more and rule 2 would make it wind
   round the world (a band drawn along its southern parallel from -180° to 180°).

These steps run in the order 2, 3, 1. What they cannot tell apart, and read by the rule: a
polygon narrower than 1e-4° in all (11 m at the equator) written across ±180° with longitudes
jumping from one side to the other is read as drawn across the map (rule 3); written with
continuous longitudes (179.99996° to 180.00004°) or cut at 180° it is read right, and so is any
wider one in any form (a UTM square reprojected with vertices 1e-5° either side of 180°).
Not handled: a boundary through the pole itself.
Rows no projection can map (a latitude beyond ±90°, a part whose longitudes span more than a
full turn by more than 1e-4°) are dropped as not projectable. In a cylindrical equal-area CRS
centred off Greenwich (+proj=cea +lon_0=100) the projected parts are cut where that CRS's world
ends (80° W), not at ±180°.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyproj
import shapely

from .crs import crs_label, densify_step, resolve_crs, to_crs, transformer
from .densify import Projector, densify_adaptive
from .exact_area import LonLatArea, polygons_with_rows
from ..util.parallel import ProgressCallback, run_chunks, split_weighted
from .segments import group_starts
from ..util.wording import count_of, plural

logger = logging.getLogger(__name__)

#: Shapely geometry type ids.
POLYGON = 3
MULTIPOLYGON = 6
COLLECTION = 7

#: A polygon thinner on average than this fraction of its largest coordinate has collapsed
#: (1e-12 is GEOS's own snapping tolerance for robust overlay: 10 µm at 10,000 km).
SLIVER_RELATIVE_WIDTH = 1e-12

#: Rows are prepared this many at a time, on both cores.
_CHUNK_ROWS = 10_000

#: ... and at most about this many input vertices at a time (a national or world layer has
#: few rows of many vertices: both cores, and temporaries of bounded size, need row chunks
#: cut by vertices too).
_CHUNK_VERTICES = 100_000

#: Longitudes are read modulo a turn up to this many turns from 0° (beyond, the doubles no
#: longer resolve a field, and the rows are not projectable).
MAX_LONGITUDE_TURNS = 1000

#: The one tolerance of the longitude/latitude reading (module docstring, "World-spanning
#: parts"): a polygon part whose longitudes span a full turn to within this many degrees is
#: drawn flat across the whole map, and its longitudes within this of the map's edges (±180°)
#: are rounding, snapped onto them; an edge whose longitudes differ by a full turn to within
#: it runs along its parallel across the map (it does not cross ±180° the short way).
#: 1e-4° is 11 m of longitude at the equator; Natural Earth's Antarctica overshoots ±180° by
#: up to 1.5e-5° (glaciated areas, 1:50m) and falls 5.1e-5° short of it (1:110m).
FULL_TURN_SNAP_DEG = 1e-4

#: make_valid passes before an invalid result's parts are merged outright.
_REPAIR_PASSES = 2

#: Why a row is not evaluated, in the order the checks run; "" marks an evaluated row.
#: null: None or not a shapely geometry; empty: an empty geometry; not_polygonal: a point,
#: line or collection without polygons; non_finite: a NaN or infinite coordinate; zero_area:
#: no positive finite area once repaired (collapsed slivers, zero-width boxes, polygons
#: thinner than ``SLIVER_RELATIVE_WIDTH`` of their coordinates);
#: not_projectable: coordinates the transformation to the equal-area CRS cannot map (in a
#: geographic CRS: latitudes beyond ±90°, longitudes spanning more than a full turn).
DROP_REASONS = ("null", "empty", "not_polygonal", "non_finite", "zero_area", "not_projectable")


@dataclass(frozen=True)
class PreparedLayer:
    """The evaluated rows of one layer.

    Attributes:
        name: "reference" or "predicted", used in messages.
        keep: int64 array, shape (n,): position in the input of each evaluated row.
        source: object array, shape (n,): repaired polygonal geometries in the source CRS, 2D.
            In a geographic CRS, rings that cross the antimeridian are made continuous (a
            field from 179° to 181° keeps longitudes up to 181° rather than jumping to -179°),
            so that distances measured from them in a local CRS are right.
        geometries: object array, shape (n,): the same in the equal-area CRS (planar units when
            the evaluation has no CRS); a polygon crossing the antimeridian is cut there into
            parts that all lie within the CRS's world extent.
        area_m2: float array, shape (n,): areas in the equal-area CRS, all > 0.
        crs: source CRS, or None in planar (pixel) space.
        n_input: number of input rows.
        n_dropped: rows excluded as null, empty, non-polygonal, non-finite or of zero area.
        n_repaired: evaluated rows whose geometry was invalid and was repaired, or was a
            GeometryCollection reduced to its polygonal parts.
        drop_reason: object array of str, shape (n_input,): one of ``DROP_REASONS`` for each
            dropped input row, "" for an evaluated one.
        lonlat: None, or (when prepared with ``lonlat_area``) object array, shape (n,): the
            polygons in longitude/latitude of the equal-area CRS's datum, cut at the
            antimeridian, not densified: overlays of these measured by ``area_of`` are exact.
            ``geometries`` are then these vertices projected as they are (for centroids,
            extents and drawings; not for areas).
        area_of: the area function of ``overlay`` geometries and their overlays:
            ``shapely.area``, or the ``exact_area.LonLatArea`` given.
        equal_area_crs: the CRS of ``geometries`` (None in planar units or when the layer is
            in it already).
    """

    name: str
    keep: np.ndarray
    source: np.ndarray
    geometries: np.ndarray
    area_m2: np.ndarray
    crs: pyproj.CRS | None
    n_input: int
    n_dropped: int
    n_repaired: int
    drop_reason: np.ndarray = field(repr=False)
    lonlat: np.ndarray | None = field(default=None, repr=False)
    area_of: Callable[[np.ndarray], np.ndarray] = shapely.area
    equal_area_crs: pyproj.CRS | None = field(default=None, repr=False)

    @property
    def n(self) -> int:
        return len(self.keep)

    @property
    def overlay(self) -> np.ndarray:
        """The geometries to overlay and measure with ``area_of``: ``lonlat`` when there,
        else ``geometries``; object array, shape (n,)."""
        return self.geometries if self.lonlat is None else self.lonlat

    def to_map(self, geoms: np.ndarray) -> np.ndarray:
        """Geometries of the ``overlay`` space (object array, shape (n,)) in the equal-area
        CRS: the same objects for a layer without ``lonlat``, else their vertices projected as
        they are (``lonlat_to_map``: for centroids, hulls and extents, not for areas)."""
        if self.lonlat is None:
            return geoms
        return lonlat_to_map(np.asarray(geoms, dtype=object), self.area_of, self.equal_area_crs)

    @property
    def n_dropped_by_reason(self) -> dict[str, int]:
        """Dropped rows per reason, every reason of ``DROP_REASONS`` present (0 if none)."""
        return {
            reason: int(np.count_nonzero(self.drop_reason == reason)) for reason in DROP_REASONS
        }


def prepare_layer(
    geometries,
    crs: pyproj.CRS | None,
    equal_area_crs: pyproj.CRS | None,
    name: str,
    progress: ProgressCallback | None = None,
    lonlat_area: LonLatArea | None = None,
) -> PreparedLayer:
    """Drop, repair and reproject one layer's geometries; the input is never modified.

    Args:
        geometries: sequence of shapely geometries or None, shape (n_input,), in ``crs``.
            Anything else in it (a WKT string, a number) is a data error: dropped as null.
        crs: the layer's CRS (pyproj CRS or anything it accepts), or None when the evaluation
            is in planar (pixel) space.
        equal_area_crs: CRS in which areas and IoU are computed (metres), or None for planar.
        name: "reference" or "predicted".
        progress: optional callable(fraction done), may raise to cancel (``run_chunks``).
        lonlat_area: from ``exact_area.lonlat_area_for([crs], equal_area_crs)``, or None.
            Given, the layer is kept in longitude/latitude without densification and measured
            exactly (``PreparedLayer.lonlat``); the caller must overlay it only with layers
            prepared the same way.

    Returns:
        A PreparedLayer. Null, empty, non-polygonal rows, rows with NaN or infinite coordinates
        and rows of zero area are dropped and counted; invalid geometries are repaired with
        ``make_valid(method="structure", keep_collapsed=False)`` keeping their polygonal parts
        and counted; Z and M values are dropped. Polygons crossing the antimeridian are
        normalised (not counted: nothing is wrong with them).

    Raises:
        TypeError: ``geometries`` is a single geometry, a string or not iterable.
        ValueError: a CRS that is not one, or a layer CRS that cannot be transformed to the
            equal-area CRS at all.
    """
    geoms = geometry_array(geometries, name)
    crs = resolve_crs(crs, f"{name} crs") if not isinstance(crs, pyproj.CRS) else crs
    if equal_area_crs is not None and not isinstance(equal_area_crs, pyproj.CRS):
        equal_area_crs = resolve_crs(equal_area_crs, "equal_area_crs")
    if crs is not None and crs.is_geographic and equal_area_crs is None:
        raise ValueError(
            f"The {name} layer is in a geographic CRS ({crs_label(crs)}): give an equal-area "
            f"CRS, or its areas would be in square degrees"
        )
    n_input = len(geoms)
    reproject = crs is not None and equal_area_crs is not None and crs != equal_area_crs

    if lonlat_area is not None and not reproject:
        raise ValueError("lonlat_area needs a geographic layer CRS and an equal-area CRS")

    def run(part: slice) -> _Chunk:
        return _prepare_chunk(
            geoms[part], crs, equal_area_crs if reproject else None, name, lonlat_area
        )

    # Rows are independent: chunks on both cores, small enough to bound the temporaries.
    chunks = run_chunks(run, _row_chunks(geoms), progress)
    if not chunks:
        chunks = [run(slice(0, 0))]
    reason = np.concatenate([c.reason for c in chunks])
    source = np.concatenate([c.source for c in chunks])
    geoms = np.concatenate([c.geometries for c in chunks])
    area = np.concatenate([c.area for c in chunks])
    repaired = np.concatenate([c.repaired for c in chunks])
    lonlat = None if lonlat_area is None else np.concatenate([c.lonlat for c in chunks])
    keep = np.flatnonzero(reason == "")
    layer = PreparedLayer(
        name=name,
        keep=keep,
        source=source[keep],
        geometries=geoms[keep],
        area_m2=area[keep],
        crs=crs,
        n_input=n_input,
        n_dropped=n_input - len(keep),
        n_repaired=int(np.count_nonzero(repaired[keep])),
        drop_reason=reason,
        lonlat=None if lonlat is None else lonlat[keep],
        area_of=shapely.area if lonlat_area is None else lonlat_area,
        equal_area_crs=equal_area_crs if reproject else None,
    )
    log_counts(layer)
    return layer


def log_counts(layer: PreparedLayer, extra: dict | None = None) -> None:
    """Log (warning) how many rows of the layer were dropped, by reason, and repaired
    (``extra``: passed to the log records)."""
    name, n_input = layer.name, layer.n_input
    if layer.n_dropped:
        counts = ", ".join(f"{k} {v}" for k, v in layer.n_dropped_by_reason.items() if v)
        logger.warning(
            "%d of %s %s not evaluated (%s)", layer.n_dropped, count_of(n_input, f"{name} row"),
            plural(layer.n_dropped, "is", "are"), counts, extra=extra,
        )
    if layer.n_repaired:
        logger.warning(
            "%s %s and %s repaired",
            count_of(layer.n_repaired, f"{name} geometry", f"{name} geometries"),
            "was invalid" if layer.n_repaired == 1 else "were invalid",
            "was" if layer.n_repaired == 1 else "were",
            extra=extra,
        )


def _row_chunks(geoms: np.ndarray) -> list[slice]:
    """Consecutive row slices covering ``geoms`` (object array, shape (n,)), each of at most
    about ``_CHUNK_ROWS`` rows and ``_CHUNK_VERTICES`` vertices, on both cores from 2,000 rows
    or 20,000 vertices on."""
    vertices = np.zeros(len(geoms))
    is_geometry = shapely.is_geometry(geoms)
    vertices[is_geometry] = shapely.get_num_coordinates(geoms[is_geometry])
    # A row's weight: its vertices, and a tenth of the share for each row on top.
    return split_weighted(vertices + 10.0, _CHUNK_VERTICES, _CHUNK_ROWS, 20_000)


@dataclass(frozen=True)
class _Chunk:
    """prepare_layer's columns for a chunk of rows, each of the chunk's length."""

    reason: np.ndarray
    source: np.ndarray
    geometries: np.ndarray
    area: np.ndarray
    repaired: np.ndarray
    lonlat: np.ndarray | None = None


def _prepare_chunk(geoms: np.ndarray, crs, equal_area_crs, name: str,
                   lonlat_area: LonLatArea | None = None) -> _Chunk:
    """Drop, repair and reproject (to ``equal_area_crs`` unless None) a chunk of rows; with
    ``lonlat_area``, keep them in longitude/latitude and measure them exactly."""
    geoms = np.array(geoms, dtype=object, copy=True)  # _drop writes into it
    n = len(geoms)
    reason = np.full(n, "", dtype=object)  # "" until a row is dropped
    _drop(geoms, reason, ~shapely.is_geometry(geoms), "null")
    _drop(geoms, reason, shapely.is_empty(geoms), "empty")
    type_id = shapely.get_type_id(geoms)
    polygonal_or_missing = np.isin(type_id, (-1, POLYGON, MULTIPOLYGON, COLLECTION))
    _drop(geoms, reason, ~polygonal_or_missing, "not_polygonal")
    non_finite, longest_edge = _coordinate_checks(geoms)
    _drop(geoms, reason, non_finite, "non_finite")
    with_zm = shapely.has_z(geoms)
    if shapely.geos_version >= (3, 12, 0):  # earlier GEOS keeps no M values
        with_zm |= shapely.has_m(geoms)
    geoms[with_zm] = shapely.force_2d(geoms[with_zm])

    reproject = equal_area_crs is not None
    if reproject and crs.is_geographic:
        # Before repair: read as planar, a ring jumping from 179° to -179° is a band round
        # the world that repair would "fix" into something else (in a collection too).
        half_turn = half_turn_of(crs)
        geoms = _collections_as_multipolygons(geoms)
        _drop(geoms, reason, _off_the_globe(geoms, half_turn), "not_projectable")
        geoms = read_lonlat(geoms, half_turn)
    geoms, invalid = _repair(geoms)
    geoms = polygonal_parts(geoms)
    missing = shapely.is_missing(geoms)
    no_polygon = missing & (type_id == COLLECTION) & ~invalid
    _drop(geoms, reason, no_polygon, "not_polygonal")
    _drop(geoms, reason, missing, "zero_area")  # nothing polygonal left after repair
    repaired = invalid | (type_id == COLLECTION)
    step = densify_step(crs) if reproject else None
    if step is not None:
        _drop(geoms, reason, _beyond_the_earth(geoms, longest_edge, repaired, step),
              "not_projectable")
    source = geoms.copy()

    if lonlat_area is not None:
        return _lonlat_chunk(geoms, reason, source, repaired, longest_edge, crs,
                             equal_area_crs, lonlat_area, name)
    if reproject:
        dense = geoms
        if step is not None:
            # Only rows with an edge longer than the step change (repaired rows may have
            # new edges: they are split too), and only where the image bends (core.geometry.densify).
            longer = np.flatnonzero((longest_edge > step) | repaired)
            dense = geoms.copy()
            dense[longer] = densify_adaptive(
                geoms[longer], Projector(crs, equal_area_crs), step,
                half_turn=half_turn_of(crs) if crs.is_geographic else None,
            )[0]
        geoms = _to_equal_area(dense, crs, equal_area_crs, name)
        del dense
        _drop(geoms, reason, shapely.is_missing(geoms), "not_projectable")
        geoms, repaired_again = _repair(geoms)
        geoms = polygonal_parts(geoms)
        repaired |= repaired_again

    area = np.zeros(n)
    present = np.flatnonzero(~shapely.is_missing(geoms))
    area[present] = shapely.area(geoms[present])
    area[present[_is_sliver(geoms[present], area[present])]] = 0.0
    _drop(geoms, reason, ~(np.isfinite(area) & (area > 0)), "zero_area")
    return _Chunk(reason, source, geoms, area, repaired)


def _lonlat_chunk(geoms, reason, source, repaired, longest_edge, crs, equal_area_crs,
                  lonlat_area, name) -> _Chunk:
    """The rest of ``_prepare_chunk`` for ``lonlat_area``: bring the (unwrapped, repaired)
    rows to longitude/latitude on the equal-area CRS's datum, cut them at the antimeridian,
    measure them exactly, project their vertices as they are.

    A change of datum (NAD83 to WGS 84 in Hawaii, say, where PROJ applies a Helmert
    transformation) bends a straight edge, a little: edges are split at points of the 50 m
    grid where their image in longitude/latitude leaves the chord, as ``densify`` does for
    the equal-area CRS (none are where the datums coincide).
    """
    lonlat_crs = lonlat_area.lonlat_crs
    half_turn = half_turn_of(lonlat_crs)
    lonlat = geoms
    try:
        if crs != lonlat_crs:
            step = densify_step(crs)
            if step is not None:
                longer = np.flatnonzero((longest_edge > step) | repaired)
                lonlat = geoms.copy()
                lonlat[longer] = densify_adaptive(
                    geoms[longer], Projector(crs, lonlat_crs), step, half_turn=half_turn_of(crs)
                )[0]
            lonlat = _drop_non_finite(to_crs(lonlat, crs, lonlat_crs))
            _drop(lonlat, reason, shapely.is_missing(lonlat), "not_projectable")
            lonlat = read_lonlat(lonlat, half_turn)
            lonlat, repaired_again = _repair(lonlat)
            lonlat = polygonal_parts(lonlat)
            repaired = repaired | repaired_again
        else:
            lonlat = geoms.copy()
        present = ~shapely.is_missing(lonlat)
        bounds = np.full((len(lonlat), 4), np.nan)
        bounds[present] = shapely.bounds(lonlat[present])
        with np.errstate(invalid="ignore"):
            beyond = (bounds[:, 0] < -half_turn) | (bounds[:, 2] > half_turn)
        if beyond.any():
            lonlat[beyond] = split_at_antimeridian(lonlat[beyond], half_turn)
        _drop(lonlat, reason, shapely.is_missing(lonlat), "not_projectable")
        projected = _drop_non_finite(lonlat_to_map(lonlat, lonlat_area, equal_area_crs))
    except pyproj.exceptions.ProjError as exc:
        raise ValueError(
            f"The {name} layer's CRS {crs_label(crs)} cannot be transformed to the equal-area "
            f"CRS {crs_label(equal_area_crs)}: {exc}"
        ) from None
    _drop(projected, reason, shapely.is_missing(projected) & ~shapely.is_missing(lonlat),
          "not_projectable")
    lonlat[shapely.is_missing(projected)] = None
    area = np.zeros(len(geoms))
    kept = np.flatnonzero(~shapely.is_missing(lonlat))
    area[kept] = lonlat_area(lonlat[kept])
    area[kept[_is_sliver(projected[kept], area[kept])]] = 0.0
    zero = ~(np.isfinite(area) & (area > 0))
    _drop(projected, reason, zero, "zero_area")
    lonlat[zero] = None
    return _Chunk(reason, source, projected, area, repaired, lonlat)


def lonlat_to_map(lonlat: np.ndarray, lonlat_area: LonLatArea, equal_area_crs) -> np.ndarray:
    """The vertices of longitude/latitude polygons (object array, shape (n,), cut at ±180°)
    projected by PROJ to the equal-area CRS, the polygons cut where that CRS's world ends
    (its central meridian ± 180°, the same cut when it is 0°): every part lies within the
    world extent, rather than spanning it from one edge to the other (a field across 80° W
    in "+proj=cea +lon_0=100"). Returns a new object array, shape (n,)."""
    half_turn = half_turn_of(lonlat_area.lonlat_crs)
    center = lonlat_area.central_meridian
    geoms = lonlat
    if center != 0.0:
        present = ~shapely.is_missing(lonlat)
        bounds = np.full((len(lonlat), 4), np.nan)
        bounds[present] = shapely.bounds(lonlat[present])
        with np.errstate(invalid="ignore"):
            rows = np.flatnonzero((bounds[:, 0] < center - half_turn)
                                  | (bounds[:, 2] > center + half_turn))
        if len(rows):
            geoms = lonlat.copy()
            moved = shapely.transform(lonlat[rows], lambda c: c - [center, 0.0])
            geoms[rows] = shapely.transform(split_at_antimeridian(moved, half_turn),
                                            lambda c: c + [center, 0.0])
    to_map = transformer(lonlat_area.lonlat_crs, equal_area_crs)

    def transform(c):
        if len(c) == 0:
            return c
        x, y = to_map.transform(c[:, 0], c[:, 1], errcheck=False)
        return np.column_stack([lonlat_area.unwrap_easting(c[:, 0], np.asarray(x)), y])

    return shapely.transform(geoms, transform)


def _off_the_globe(geoms: np.ndarray, half_turn: float) -> np.ndarray:
    """Boolean mask, shape (n,), of longitude/latitude geometries no projection can map: a
    latitude beyond ±90°, a polygon part whose longitudes span more than a full turn by more
    than ``FULL_TURN_SNAP_DEG`` (a ring wound round the world more than once has no one area;
    parts of one row may together span more, as a field written from 179° to 181° beside one
    at -179.5°), or longitudes beyond ``MAX_LONGITUDE_TURNS`` turns."""
    off = np.zeros(len(geoms), dtype=bool)
    present = np.flatnonzero(~shapely.is_missing(geoms))
    if len(present) == 0:
        return off
    west, south, east, north = shapely.bounds(geoms[present]).T
    turn = 2.0 * half_turn
    with np.errstate(invalid="ignore", over="ignore"):
        off[present] = ((np.maximum(-south, north) > half_turn / 2)
                        | (np.maximum(-west, east) > MAX_LONGITUDE_TURNS * turn))
        turn_and_snap = turn + FULL_TURN_SNAP_DEG / 180.0 * half_turn
        wide = present[(east - west > turn_and_snap) & ~off[present]]
    if len(wide):
        parts, row = shapely.get_parts(geoms[wide], return_index=True)
        part_bounds = shapely.bounds(parts)
        with np.errstate(invalid="ignore", over="ignore"):
            too_wide = ~(part_bounds[:, 2] - part_bounds[:, 0] <= turn_and_snap)
        off[wide[np.unique(row[too_wide])]] = True
    return off


def read_lonlat(geoms: np.ndarray, half_turn: float = 180.0) -> np.ndarray:
    """The one reading of longitude/latitude polygons (module docstring): collections as
    multipolygons of their polygons, rings across the antimeridian or round a pole made
    continuous (``unwrap_antimeridian``), then parts drawn across the whole map snapped onto its
    edges (``snap_full_turns``).

    ``geoms``: object array, shape (n,), longitude as x in units where ``half_turn`` is 180°.
    Returns a new object array, shape (n,). Nothing is dropped here; rows spanning more than
    a full turn are left for ``_off_the_globe``."""
    geoms = unwrap_antimeridian(_collections_as_multipolygons(geoms), half_turn)
    return snap_full_turns(geoms, half_turn)


def snap_full_turns(geoms: np.ndarray, half_turn: float = 180.0) -> np.ndarray:
    """Polygon parts drawn from one edge of the map to the other, with their longitudes within
    ``FULL_TURN_SNAP_DEG`` of those edges snapped onto them.

    ``geoms``: object array, shape (n,), of polygonal geometries (or None) with longitude as x,
    in units where ``half_turn`` is 180°. A part is drawn across the map when its westernmost
    and easternmost longitudes are within ``FULL_TURN_SNAP_DEG`` of two map edges a full turn
    apart (odd multiples of ``half_turn``: -180° and 180° for every layer written in -180…180).
    Such a part (Antarctica, a cap drawn flat, a band round the world) ends at the map's edges:
    a longitude 1e-13° beyond 180° or 5e-5° short of it is their rounding, not a sliver of
    ground on the far side of the antimeridian nor a gap. Each vertex moves by at most
    ``FULL_TURN_SNAP_DEG`` in longitude, so the part's area changes by at most the ground of
    two meridian strips that wide over the latitudes of the vertices moved (at most 2.8e8 m²
    on the WGS 84 ellipsoid, two strips from pole to pole; for Natural Earth's Antarctica,
    whose vertices that near ±180° lie south of 78° S, at most 3e6 m², 3e-7 of its area).
    Other parts and rows are unchanged (rows that need no change are the same objects).
    """
    out = np.array(geoms, dtype=object, copy=True)
    rows = np.flatnonzero(np.isin(shapely.get_type_id(out), (POLYGON, MULTIPOLYGON))
                          & ~shapely.is_empty(out))
    if len(rows) == 0:
        return out
    turn = 2.0 * half_turn
    snap = FULL_TURN_SNAP_DEG / 180.0 * half_turn
    bounds = shapely.bounds(out[rows])
    with np.errstate(invalid="ignore", over="ignore"):
        rows = rows[bounds[:, 2] - bounds[:, 0] >= turn - snap]
    if len(rows) == 0:
        return out
    parts, part_row = shapely.get_parts(out[rows], return_index=True)
    part_bounds = shapely.bounds(parts)
    edge = turn * np.round((part_bounds[:, 0] + half_turn) / turn) - half_turn
    with np.errstate(invalid="ignore", over="ignore"):
        world = ((np.abs(part_bounds[:, 0] - edge) <= snap)
                 & (np.abs(part_bounds[:, 2] - edge - turn) <= snap))
    if not world.any():
        return out
    for j in np.flatnonzero(world):  # a loop over world-spanning parts only
        west, east = edge[j], edge[j] + turn

        def onto_edges(xy, west=west, east=east):
            x = xy[:, 0]
            x = np.where(np.abs(x - west) <= snap, west,
                         np.where(np.abs(x - east) <= snap, east, x))
            return np.column_stack([x, xy[:, 1]])

        parts[j] = shapely.transform(parts[j], onto_edges)
    changed = np.unique(part_row[world])
    on_changed = np.isin(part_row, changed)
    _, compact = np.unique(part_row[on_changed], return_inverse=True)
    rebuilt = shapely.multipolygons(parts[on_changed], indices=compact)
    single = (shapely.get_type_id(out[rows[changed]]) == POLYGON) & (
        shapely.get_num_geometries(rebuilt) == 1)
    rebuilt[single] = shapely.get_geometry(rebuilt[single], 0)
    out[rows[changed]] = rebuilt
    return out


def _collections_as_multipolygons(geoms: np.ndarray) -> np.ndarray:
    """GeometryCollections (nested ones too) replaced by a MultiPolygon of their polygons, or
    None when they hold none; other rows unchanged. Object array, shape (n,), in and out.
    The parts are not merged: repair does that, after ``unwrap_antimeridian``."""
    rows = np.flatnonzero(shapely.get_type_id(geoms) == COLLECTION)
    if len(rows) == 0:
        return geoms
    out = geoms.copy()
    parts, row = polygons_with_rows(geoms[rows])
    out[rows] = None
    if len(parts):
        has, compact = np.unique(row, return_inverse=True)
        order = np.argsort(compact, kind="stable")
        out[rows[has]] = shapely.multipolygons(parts[order], indices=compact[order])
    return out


def polygonal_parts(geoms: np.ndarray) -> np.ndarray:
    """Keep the polygonal parts of each geometry; geometries without any become None.

    ``geoms``: object array, shape (n,). A GeometryCollection becomes the union of its polygons
    and multipolygons (the loop runs only over collections, which are rare: mixed input, or the
    output of a "linework" repair such as QGIS's Fix geometries).
    """
    out = np.array(geoms, dtype=object, copy=True)
    type_id = shapely.get_type_id(out)
    for k in np.flatnonzero(type_id == COLLECTION):
        parts = shapely.get_parts(out[k])
        polys = parts[np.isin(shapely.get_type_id(parts), (POLYGON, MULTIPOLYGON))]
        out[k] = _union(polys) if len(polys) else None
    out[~np.isin(type_id, (POLYGON, MULTIPOLYGON, COLLECTION))] = None
    return out


def unwrap_antimeridian(geoms: np.ndarray, half_turn: float = 180.0) -> np.ndarray:
    """Make longitudes continuous along every ring that crosses the antimeridian.

    ``geoms``: object array, shape (n,), of polygonal geometries (or None) with longitude as x,
    in units where ``half_turn`` is 180°. An edge whose longitudes differ by more than a half
    turn (and less than a full one) is read as crossing ±180° the short way round (the reading
    of web maps and of the ``antimeridian`` package; RFC 7946 §3.1.9 asks writers to cut such
    geometries instead, which needs nothing here): its later vertices are shifted by a full
    turn, and each hole by the whole turns that bring it next to its shell. A ring that then ends a full turn
    from where it started encircles a pole: it is closed along the meridians to the pole nearer
    its mean latitude and back, from the ring's vertex nearest that pole (along that meridian
    the ring meets nothing; from any other vertex the closing meridian may cross the ring, as it
    crossed Antarctica's peninsula from its first vertex). Left as they are (read as drawn):
    collections; parts that the short way would make a sliver narrower than
    ``FULL_TURN_SNAP_DEG`` across ±180° (box(-180, 80, 180, 90), a cap drawn flat, and
    box(-180, 80, 179.99995, 90), one a hair short of the map's edge: not slivers 0° or 5e-5°
    wide); and parts with an edge of a full turn or more (along a parallel across the map) that
    the short way would make wind round the world (a band drawn along its southern edge from
    -180° to 180°). An edge of a full turn in a part that the short way closes runs along
    ±180° (an island cut there, one edge written from 180° to -180°).

    Returns a new object array, shape (n,); rows that need no change are the same objects.
    """
    out = np.array(geoms, dtype=object, copy=True)
    coords, index = shapely.get_coordinates(out, return_index=True)
    dx = np.abs(np.diff(coords[:, 0]))
    same_row = index[1:] == index[:-1]
    candidates = np.zeros(len(out), dtype=bool)
    candidates[index[1:][same_row & (dx > half_turn)]] = True
    candidates &= np.isin(shapely.get_type_id(out), (POLYGON, MULTIPOLYGON))
    rows = np.flatnonzero(candidates)
    if len(rows) == 0:
        return out
    out[rows] = _unwrap_polygons(out[rows], half_turn)
    logger.debug("%s the antimeridian", count_of(len(rows), "polygon crosses",
                                                  "polygons cross"))
    return out


def split_at_antimeridian(geoms: np.ndarray, half_turn: float = 180.0) -> np.ndarray:
    """Cut polygons with longitudes beyond ±half_turn into parts within [-half_turn, half_turn].

    ``geoms``: object array, shape (n,), polygonal geometries (or None) with continuous
    longitudes as x (see ``unwrap_antimeridian``). The part of a geometry in the longitude
    band [(2k - 1)·half_turn, (2k + 1)·half_turn] is shifted by -2k·half_turn; the parts of one
    row form a MultiPolygon. Returns a new object array, shape (n,).
    """
    out = np.array(geoms, dtype=object, copy=True)
    present = ~shapely.is_missing(out)
    bounds = np.full((len(out), 4), np.nan)
    bounds[present] = shapely.bounds(out[present])
    with np.errstate(invalid="ignore"):
        rows = np.flatnonzero((bounds[:, 0] < -half_turn) | (bounds[:, 2] > half_turn))
    if len(rows) == 0:
        return out
    turn = 2.0 * half_turn
    k_low = np.floor((bounds[rows, 0] + half_turn) / turn).astype(np.int64)
    k_high = np.floor((bounds[rows, 2] + half_turn) / turn).astype(np.int64)
    n_bands = k_high - k_low + 1
    band_row = np.repeat(np.arange(len(rows)), n_bands)
    first_band = np.repeat(np.cumsum(n_bands) - n_bands, n_bands)
    k = k_low[band_row] + np.arange(len(band_row)) - first_band
    south = bounds[rows, 1][band_row] - 1.0
    north = bounds[rows, 3][band_row] + 1.0
    bands = shapely.box(k * turn - half_turn, south, k * turn + half_turn, north)
    pieces = guarded_intersection(out[rows][band_row], bands,
                                  "a geometry could not be cut at the antimeridian")
    coords, index = shapely.get_coordinates(pieces, return_index=True)
    coords[:, 0] -= k[index] * turn
    pieces = shapely.set_coordinates(pieces, coords)
    parts, part_band = shapely.get_parts(pieces, return_index=True)
    polygon = shapely.get_type_id(parts) == POLYGON
    parts, part_row = parts[polygon], band_row[part_band[polygon]]
    out[rows] = None
    if len(parts):
        has_parts, compact = np.unique(part_row, return_inverse=True)
        joined = shapely.multipolygons(parts, indices=compact)
        # A ring closed through a pole is cut along its first meridian too: merge such parts.
        seam = ~shapely.is_valid(joined)
        joined[seam] = shapely.make_valid(
            joined[seam], method="structure", keep_collapsed=False
        )
        out[rows[has_parts]] = joined
    return out


def geometry_array(geometries, name: str) -> np.ndarray:
    """A new object array, shape (n,), holding the given sequence's items (never a view).

    Raises TypeError naming ``name`` for a single geometry, a string or a non-iterable.
    """
    if isinstance(geometries, (str, bytes, shapely.Geometry)):
        raise TypeError(
            f"{name} geometries must be a sequence of geometries, got a single "
            f"{type(geometries).__name__}"
        )
    if isinstance(geometries, np.ndarray):
        return np.array(geometries, dtype=object).reshape(-1)
    try:
        values = list(geometries)
    except TypeError:
        raise TypeError(
            f"{name} geometries must be a sequence of geometries, got "
            f"{type(geometries).__name__}"
        ) from None
    out = np.array(values, dtype=object)
    if out.shape != (len(values),):  # nested sequences (coordinates, not geometries)
        out = np.empty(len(values), dtype=object)
        for k, value in enumerate(values):
            out[k] = value
    return out


def _drop(geoms: np.ndarray, reason: np.ndarray, mask: np.ndarray, why: str) -> None:
    """Record ``why`` for rows in ``mask`` not dropped yet, and set them to None (in place:
    both arrays are prepare_layer's own)."""
    new = mask & (reason == "")
    reason[new] = why
    geoms[new] = None


def _is_sliver(geoms: np.ndarray, area: np.ndarray) -> np.ndarray:
    """Boolean mask, shape (n,): polygons whose mean width, 2·area / perimeter, is below
    ``SLIVER_RELATIVE_WIDTH`` of their largest absolute coordinate (below what doubles resolve
    there, so that even their overlay with themselves comes out empty)."""
    if len(geoms) == 0:
        return np.zeros(0, dtype=bool)
    magnitude = np.abs(shapely.bounds(geoms)).max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        width = 2.0 * area / shapely.length(geoms)
    return width < SLIVER_RELATIVE_WIDTH * magnitude


def _has_non_finite(geoms: np.ndarray) -> np.ndarray:
    """Boolean mask, shape (n,): geometries with a NaN or infinite x or y coordinate."""
    return _coordinate_checks(geoms)[0]


#: An edge longer than this many 50 m steps (100,000 km: 2.5 times round the Earth) is on no
#: map of the Earth.
_MAX_EDGE_STEPS = 2_000_000


def _beyond_the_earth(geoms, longest_edge, repaired, step: float) -> np.ndarray:
    """Rows (bool, shape (n,)) with an edge longer than ``_MAX_EDGE_STEPS`` densify steps
    (``step``, CRS units): their vertices lie far outside any projection's area, and cutting
    such an edge into 50 m pieces would take billions of them (a 10¹² m edge in UTM stopped
    the run: GEOS "Tolerance is too small compared to geometry length"). ``longest_edge``
    (``_coordinate_checks``) is of the rows before repair; a repaired row's edges are bounded
    by its box's diagonal instead."""
    limit = _MAX_EDGE_STEPS * step
    far = np.asarray(longest_edge, dtype=float) > limit
    rows = np.flatnonzero(repaired & ~shapely.is_missing(geoms))
    if len(rows):
        box = shapely.bounds(geoms[rows])
        with np.errstate(invalid="ignore", over="ignore"):
            far[rows] |= np.hypot(box[:, 2] - box[:, 0], box[:, 3] - box[:, 1]) > limit
    return far


def _coordinate_checks(geoms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(non_finite, longest_edge)``, shape (n,) each: geometries with a NaN or infinite x or
    y coordinate, and an upper bound of each geometry's longest edge in its CRS units (the
    longest step between consecutive coordinates, across rings too; NaN where not finite)."""
    coords, index = shapely.get_coordinates(geoms, return_index=True)
    bad = np.zeros(len(geoms), dtype=bool)
    bad[index[~np.isfinite(coords).all(axis=1)]] = True
    longest = np.zeros(len(geoms))
    if len(coords) > 1:
        # Length of the step into each coordinate from the one before it in the same row
        # (0 for a row's first), then the largest per row (rows are contiguous and sorted).
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: rows dropped anyway
            step = np.diff(coords, axis=0)
            length = np.sqrt(step[:, 0] * step[:, 0] + step[:, 1] * step[:, 1])
        length = np.r_[0.0, np.where(index[1:] == index[:-1], length, 0.0)]
        starts = group_starts(index)
        longest[index[starts]] = np.maximum.reduceat(length, starts)
    return bad, longest


def _drop_non_finite(geoms: np.ndarray) -> np.ndarray:
    """Replace geometries with any NaN or infinite coordinate by None."""
    bad = _has_non_finite(geoms)
    if not bad.any():
        return geoms
    out = geoms.copy()
    out[bad] = None
    return out


def _to_equal_area(dense: np.ndarray, crs, equal_area_crs, name: str) -> np.ndarray:
    """Reproject densified geometries to the equal-area CRS; rows that fail become None.

    Goes through longitude/latitude on the equal-area CRS's datum (the same pipeline PROJ runs
    for the direct transformation, in two steps), where antimeridian crossings are normalised.
    The coordinates of all rows are transformed as one array; only rows with an edge longer
    than half a turn of longitude, or longitudes beyond ±180°, are rebuilt in
    longitude/latitude for ``unwrap_antimeridian`` and ``split_at_antimeridian``. The cut is
    where the equal-area CRS's world ends, its central meridian ± 180° (80° W in EPSG:8859,
    Equal Earth Asia-Pacific), and a vertex on that line gets the easting of its own side.
    Raises ValueError if no transformation between the CRSs exists.
    """
    lonlat_crs = equal_area_crs.geodetic_crs
    try:
        if lonlat_crs is None:
            return _drop_non_finite(to_crs(dense, crs, equal_area_crs))
        half_turn = half_turn_of(lonlat_crs)
        center = _central_longitude(equal_area_crs, lonlat_crs)
        coords, row = shapely.get_coordinates(dense, return_index=True)
        lon, lat = coords[:, 0], coords[:, 1]
        if len(coords) and crs != lonlat_crs:
            to_lonlat = transformer(crs, lonlat_crs)
            lon, lat = to_lonlat.transform(lon, lat, errcheck=False)
        out = np.full(len(dense), None, dtype=object)
        bad = np.zeros(len(dense), dtype=bool)
        bad[row[~(np.isfinite(lon) & np.isfinite(lat))]] = True
        wrap = np.zeros(len(dense), dtype=bool)
        with np.errstate(invalid="ignore"):  # inf - inf of the bad rows' vertices
            wrap[row[np.abs(lon - center) > half_turn]] = True
            jump = (np.abs(np.diff(lon)) > half_turn) & (row[1:] == row[:-1])
        wrap[row[1:][jump]] = True
        wrap &= ~bad
        plain = ~(bad | wrap | shapely.is_missing(dense))
        on_plain = plain[row]
        x, y = lon[on_plain], lat[on_plain]
        to_target = transformer(lonlat_crs, equal_area_crs)
        if len(x):
            x, y = _edge_side(to_target, x, y, center, half_turn)
        out[plain] = shapely.set_coordinates(
            np.array(dense[plain], dtype=object, copy=True), np.column_stack([x, y])
        )
        out[np.unique(row[on_plain][~(np.isfinite(x) & np.isfinite(y))])] = None
        if wrap.any():
            rows = np.flatnonzero(wrap)
            on_wrap = wrap[row]
            lonlat = shapely.set_coordinates(
                np.array(dense[rows], dtype=object, copy=True),
                np.column_stack([lon[on_wrap], lat[on_wrap]]),
            )
            lonlat = read_lonlat(lonlat, half_turn)
            if center:
                lonlat = shapely.transform(lonlat, lambda c: c - [center, 0.0])
            lonlat = split_at_antimeridian(lonlat, half_turn)
            if center:
                lonlat = shapely.transform(lonlat, lambda c: c + [center, 0.0])
            step = densify_step(lonlat_crs)
            if step is not None:  # the cut edges: where the world ends, meridians may bend
                lonlat = densify_adaptive(lonlat, Projector(lonlat_crs, equal_area_crs), step,
                                          half_turn=half_turn)[0]
            out[rows] = _drop_non_finite(shapely.transform(
                lonlat, lambda x, y: _edge_side(to_target, x, y, center, half_turn),
                interleaved=False))
        return out
    except pyproj.exceptions.ProjError as exc:
        raise ValueError(
            f"The {name} layer's CRS {crs_label(crs)} cannot be transformed to the equal-area "
            f"CRS {crs_label(equal_area_crs)}: {exc}"
        ) from None


def _central_longitude(crs: pyproj.CRS, lonlat_crs: pyproj.CRS) -> float:
    """A projected CRS's central meridian (EPSG parameters 8802, 8822) in the unit of
    ``lonlat_crs``'s axes; 0 if it has none."""
    operation = crs.coordinate_operation
    for param in [] if operation is None else operation.params:
        if param.code in ("8802", "8822"):
            radians = float(param.value) * float(param.unit_conversion_factor)
            return radians / float(lonlat_crs.axis_info[0].unit_conversion_factor)
    return 0.0


def _edge_side(transformer, lon, lat, center: float, half_turn: float):
    """``transformer.transform(lon, lat)`` with the eastings of vertices on the line
    ``center ± half_turn`` (where PROJ wraps, and gives both sides one easting) mirrored about
    the central meridian onto their own side; arrays of shape (n,) in and out."""
    x, y = transformer.transform(lon, lat, errcheck=False)
    x = np.asarray(x, dtype=float)
    offset = np.asarray(lon) - center
    edge = np.flatnonzero(np.abs(offset) == half_turn)
    if len(edge):
        mid, _ = transformer.transform(np.full(len(edge), center), np.asarray(lat)[edge],
                                       errcheck=False)
        mid = np.asarray(mid, dtype=float)
        wrong = np.sign(x[edge] - mid) == -np.sign(offset[edge])
        x[edge[wrong]] = 2.0 * mid[wrong] - x[edge[wrong]]
    return x, np.asarray(y, dtype=float)


def half_turn_of(crs: pyproj.CRS) -> float:
    """180° in the angular unit of a geographic CRS's axes."""
    axis = crs.axis_info[0]
    if "degree" in axis.unit_name:
        return 180.0
    return math.pi / axis.unit_conversion_factor


def _unwrap_polygons(geoms: np.ndarray, half_turn: float) -> np.ndarray:
    """``unwrap_antimeridian`` on Polygons and MultiPolygons, all rebuilt; vectorised."""
    turn = 2.0 * half_turn
    parts, part_row = shapely.get_parts(geoms, return_index=True)
    nonempty = ~shapely.is_empty(parts)
    parts, part_row = parts[nonempty], part_row[nonempty]
    rings, ring_part = shapely.get_rings(parts, return_index=True)
    coords, coord_ring = shapely.get_coordinates(rings, return_index=True)
    n_coords = np.bincount(coord_ring, minlength=len(rings))
    start = np.cumsum(n_coords) - n_coords
    end = start + n_coords - 1

    dx = np.diff(coords[:, 0])
    same_ring = coord_ring[1:] == coord_ring[:-1]
    wide_parts = np.unique(ring_part[coord_ring[1:][same_ring & (np.abs(dx) >= turn)]])
    step = np.where(dx > half_turn, -turn, np.where(dx < -half_turn, turn, 0.0)) * same_ring
    shift = np.concatenate([[0.0], np.cumsum(step)])
    shift -= np.repeat(shift[start], n_coords)
    x = coords[:, 0] + shift

    # Holes: the whole turns that bring each ring's first vertex nearest its shell's.
    shell = np.flatnonzero(np.r_[True, ring_part[1:] != ring_part[:-1]])
    shell_of_ring = shell[np.searchsorted(shell, np.arange(len(rings)), side="right") - 1]
    whole_turns = np.round((x[start] - x[start[shell_of_ring]]) / turn)
    x -= np.repeat(whole_turns * turn, n_coords)
    coords = np.column_stack([x, coords[:, 1]])

    # A ring that ends a full turn from its start encircles a pole: close it through the pole.
    polar = np.abs(x[end] - x[start]) > half_turn
    # A part that the short way makes a sliver narrower than FULL_TURN_SNAP_DEG across ±180°
    # is a drawing across the map a hair short of its edges: read as drawn.
    part_of_coord = ring_part[coord_ring]
    n_parts = len(parts)
    low = np.full(n_parts, np.inf)
    high = np.full(n_parts, -np.inf)
    np.minimum.at(low, part_of_coord, x)
    np.maximum.at(high, part_of_coord, x)
    polar_part = np.zeros(n_parts, dtype=bool)
    polar_part[ring_part[polar]] = True
    sliver = ~polar_part & (high - low <= FULL_TURN_SNAP_DEG / 180.0 * half_turn)
    # A part with an edge of a full turn (or more) that the short way makes wind round the
    # world is drawn flat along that edge's parallel (a band drawn from -180° to 180° along
    # its southern edge); one that the short way closes is cut along ±180° (world-atlas draws
    # Wrangel Island's western half with an edge from 180° to -180°).
    full_turn = np.zeros(n_parts, dtype=bool)
    full_turn[wide_parts] = True
    wide_parts = np.flatnonzero(sliver | (full_turn & polar_part))
    if polar.any():
        coords, coord_ring = _close_through_poles(coords, coord_ring, start, end, polar,
                                                  shell, shell_of_ring, half_turn)

    new_rings = shapely.linearrings(coords, indices=coord_ring)
    polygons = shapely.polygons(new_rings, indices=ring_part)
    polygons[wide_parts] = parts[wide_parts]
    out = shapely.multipolygons(polygons, indices=part_row)
    single = (shapely.get_type_id(geoms) == POLYGON) & (shapely.get_num_geometries(out) == 1)
    out[single] = shapely.get_geometry(out[single], 0)
    return out


def _close_through_poles(coords, coord_ring, start, end, polar, shell, shell_of_ring,
                         half_turn):
    """Rings that wind round a pole (``polar``, bool per ring) closed through it.

    ``coords`` (m, 2) with continuous longitudes and ``coord_ring`` (m,) as in
    ``_unwrap_polygons``; ``start``/``end``: each ring's first and last coordinate positions;
    ``shell``: positions of the shell rings, ``shell_of_ring`` each ring's shell. The pole is
    the one nearer the ring's mean latitude. A polar shell starts anew at its vertex nearest
    that pole (the vertices before it move to the end, a turn on), so that the closing meridian
    runs south (or north) of every vertex and meets nothing; the holes of such a shell are
    moved by whole turns to start inside its new span. A polygon with a hole round the pole too
    (an annulus round it) keeps both rings' closing meridians at their first vertices, as
    before.
    Returns the new (coords, coord_ring)."""
    turn = 2.0 * half_turn
    n_rings = len(start)
    lengths = end - start + 1
    mean_y = np.bincount(coord_ring, weights=coords[:, 1], minlength=n_rings) / lengths
    rings = [coords[start[r]:end[r] + 1] for r in range(n_rings)]
    # Shells whose holes do not wind round the pole too (an annulus round it keeps the
    # closing meridians of its two rings from their first vertices, aligned as they are).
    rotate = np.zeros(n_rings, dtype=bool)
    rotate[shell] = True
    rotate[shell_of_ring[polar & (shell_of_ring != np.arange(n_rings))]] = False
    rotated_start = {}
    for r in np.flatnonzero(polar):  # a loop over rings round a pole only (a few per layer)
        ring = rings[r]
        pole = (0.5 if mean_y[r] >= 0 else -0.5) * half_turn
        if rotate[r]:
            shift = ring[-1, 0] - ring[0, 0]  # a full turn, east or west
            open_ring = ring[:-1]
            m = int(np.argmax(open_ring[:, 1]) if pole > 0 else np.argmin(open_ring[:, 1]))
            ring = np.concatenate([open_ring[m:], open_ring[:m] + [shift, 0.0],
                                   open_ring[m:m + 1] + [shift, 0.0]])
            rotated_start[r] = (ring[0, 0], shift)
        rings[r] = np.concatenate([ring, [[ring[-1, 0], pole], [ring[0, 0], pole], ring[0]]])
    for r in range(n_rings):
        home = shell_of_ring[r]
        if r == home or home not in rotated_start or polar[r]:
            continue
        west, shift = rotated_start[home]
        low = west if shift > 0 else west + shift
        turns = np.floor((rings[r][0, 0] - low) / turn)
        rings[r] = rings[r] - [turns * turn, 0.0]
    new_lengths = np.array([len(ring) for ring in rings])
    return np.concatenate(rings), np.repeat(np.arange(n_rings), new_lengths)


def guarded_intersection(a: np.ndarray, b: np.ndarray, failure: str) -> np.ndarray:
    """``a[k] ∩ b[k]``, object array of shape (n,); a pair GEOS cannot overlay becomes None
    (logged as ``failure``: the error) instead of aborting the rest."""
    try:
        with np.errstate(all="ignore"):  # GEOS's floating-point flags are not errors
            return shapely.intersection(a, b)
    except shapely.errors.GEOSException:
        pass
    out = np.full(len(a), None, dtype=object)
    for k in range(len(a)):  # only after the vectorised call failed
        try:
            with np.errstate(all="ignore"):
                out[k] = shapely.intersection(a[k], b[k])
        except shapely.errors.GEOSException as exc:
            logger.warning("%s: %s", failure, exc)
    return out


def _union(polys: np.ndarray):
    """Union of polygonal geometries, None if GEOS cannot overlay them."""
    try:
        return shapely.union_all(polys)
    except shapely.errors.GEOSException:
        pass
    try:
        return shapely.union_all(shapely.make_valid(polys, method="structure"))
    except shapely.errors.GEOSException as exc:
        logger.warning("the polygons of a collection could not be merged: %s", exc)
        return None


def _repair(geoms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Repair invalid geometries; returns (geometries, repaired mask of shape (n,))."""
    present = ~shapely.is_missing(geoms)
    invalid = np.zeros(len(geoms), dtype=bool)
    invalid[present] = ~shapely.is_valid(geoms[present])
    if not invalid.any():
        return geoms, invalid
    out = geoms.copy()
    idx = np.flatnonzero(invalid)
    for _ in range(_REPAIR_PASSES):
        try:
            out[idx] = shapely.make_valid(out[idx], method="structure", keep_collapsed=False)
        except shapely.errors.GEOSException:
            # One geometry GEOS cannot repair must not cost the others their repair.
            out[idx] = [_repair_one(g) for g in out[idx]]
        # GEOS 3.11 can return parts that share an edge (a ring retracing one of its edges):
        # a second pass merges them.
        still = ~shapely.is_missing(out[idx])
        still[still] = ~shapely.is_valid(out[idx][still])
        idx = idx[still]
        if len(idx) == 0:
            break
    for k in idx:  # rarer still: merge the parts outright
        out[k] = _union(shapely.get_parts(out[k]))
    return out, invalid


def _repair_one(geom):
    try:
        return shapely.make_valid(geom, method="structure", keep_collapsed=False)
    except shapely.errors.GEOSException as exc:
        logger.warning("a geometry could not be repaired and is dropped: %s", exc)
        return None
