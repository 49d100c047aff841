"""Exact work units: a large evaluation evaluated piece by piece, with the numbers of a
one-piece run.

Design: connected components of the candidate graph
----------------------------------------------------
The rows are split into work units, each a set of whole connected components of the graph
whose nodes are the reference rows (ignore regions included) and the predicted rows, and
whose edges join a reference and a prediction whose envelopes, widened by the reach, meet.
The reach is the boundary tolerance times the largest of its multiples (the boundary curve),
or 0 without a tolerance, turned into the reference CRS's units generously (``_reach``);
predicted envelopes in another CRS are transformed with densified edges and widened by twice
their edges' bend between samples and by ``_TRANSFORM_MARGIN`` of their size. Components are
packed, in order along a space-filling sweep, into units of at most ``max_features`` rows; a
component larger than that is a unit of its own (a giant unit: checked against the memory
budget first, ``check_unit_memory``).
Each unit runs the geometry stages of ``evaluate`` (``evaluate_unit``: prepare, candidate
pairs, match, ignore coverage, boundary distances and lengths, the boundary curve's lengths,
average precision's candidate pairs); everything else runs once on the units' compact arrays
(``evaluation.conclude``), the same code as a one-piece run.

Why it is exact. Every quantity a geometry stage computes for a row depends only on that row
and on rows of the other layer that overlap it or come within the reach of it: a pair's
intersection and IoU (and its bound, settled per pair against the pairs of its two rows), a
prediction's coverage by ignore regions, a matched pair's boundary distances, a boundary's
length within each tolerance ("more rows of the other layer cost time, never a value",
boundary/curve.py), COCO's candidate IoUs. The boundary solvers give each pair and each
polygon the same bits whatever else is in their batch (blocks hold whole pairs, tolerance
lengths are summed exactly per polygon: boundary/_exact.py, boundary/tolerance.py;
tests/test_core_boundary_batch.py). All of those rows are in the same component, so in
the same unit, and a unit keeps rows in input order, so every array a stage sees is the
one-piece array restricted to the unit, in the same order. Every matching rule decomposes
over components: greedy one-to-one takes pairs by descending IoU (ties by reference, then
prediction position, an order the restriction keeps) and a pair's acceptance depends only
on earlier pairs sharing one of its rows, all in its component; many-to-one is per
prediction; the optimal assignment maximises a sum of independent per-component terms
(``matching.rules`` solves it per component already). The matching is run once more on the
global pair list (``conclude`` needs it for the threshold sweep and detection) and checked
against the units' matches. The stages after matching (tables, summary metrics, strata,
size classes, groups, classes, the threshold sweep, detection, average precision's
accumulation, bootstrap with the same seed, the boundary curve's sample) read only per-row and
per-pair arrays, which are reassembled in one-piece order, so they give the same bits. Maxima
(the equal-area check, the planar bounds) combine exactly. The curve's random sample (layers
over ``CURVE_SAMPLE_SIZE``) is drawn once over the whole layer with the same seed and measured
by the units holding the drawn rows, in a second pass over those units only.

What is held for the whole run (per million reference fields and about a million
predictions, float64 / int64 unless said): envelopes 2 × 32 MB, the component labels and
unit rows 3 × 8 MB per layer; per evaluated row: input position, area, matched position,
IoU, best IoU, 5 more per-prediction columns and about 25 per-field columns (the per-field
table and report need them), ~0.3 GB together; the pairs (about 3 per field: positions,
intersection, IoU, bound flag: 33 B each) ~0.1 GB; the summary's quantities
(``summary.QUANTITIES`` columns) are made block by block (``quantities.py``), and the whole
matrix (~0.2 GB) only for the bootstrap, whose replicates are made in blocks
(``grouping.bootstrap_weights``). Geometries are held only for the unit being evaluated
(one per worker), and each unit's arrays are written to a temporary file as it is
collected (``_ResultSpill``) and read back one array of every unit at a time when the run's
are assembled. The repaired source geometries of the evaluated rows, which the caller's
TP/FP/FN outputs are written from, are the input geometries except for the rows a unit
changed (repaired, made 2D, made continuous across the antimeridian: on the bench
generator's layers 0.3 % of the fields and 0.8 % of the predictions), which are taken out of
each result (``_Sources``): so a layer's sources are the input array, or for layers given as
``geometry.StoredGeometries`` a view of the input store (8 B per row) with the changed rows
written beside it. Measured at the peak, with the caller's attribute values and ids: about
0.9 GB per million fields (1M generated fields through ``qgis_process`` with every output:
1,182 MiB, of which ~260 MiB is QGIS itself), against ~5.3 KB per field for a one-piece
run; see bench/README.md ("National scale through qgis_process").
"""

from __future__ import annotations

import dataclasses
import logging
import math
import operator
import pickle  # nosec B403 (only this process's own spill file is read back)
from dataclasses import dataclass

import numpy as np
import pyproj
import shapely

from ..boundary.curve import (
    CURVE_SAMPLE_SEED,
    CURVE_SAMPLE_SIZE,
    curve_from_lengths,
    draw_sample,
    sampled_side,
)
from ..boundary.tolerance import tolerance_lengths_in_utm_at
from ..geometry.crs import area_change_warnings, worst_area_change
from ..geometry.prepare import PreparedLayer, half_turn_of, log_counts, read_lonlat
from ..geometry.prepare import logger as prepare_logger
from ..geometry.stored import (
    SpillFile,
    StoredGeometries,
    bounds_of,
    envelopes,
    num_coordinates_of,
    take,
)
from ..matching.average_precision import candidate_ious
from ..matching.rules import match
from ..pairs.overlap import OverlapPairs
from ..util import allocator
from ..util.memory import check_memory
from ..util.progress import Progress
from . import evaluate as stages

#: Rows (reference and predicted) per work unit: about 40 MB of geometries and their
#: prepared copies on the generator's fields.
UNIT_FEATURES = 20_000

#: Units submitted to an executor and not yet collected (two per worker of a 2-worker
#: cluster, so none waits for work).
IN_FLIGHT = 4

#: Memory of a unit per vertex of its input geometries, bytes: the prepared, densified and
#: zoned copies and the overlays (measured on bench fields, about 6 KB per field of 30
#: vertices, rounded up).
_BYTES_PER_VERTEX = 400

#: Predicted envelopes transformed to the reference CRS are widened by this share of their
#: size (and of the coordinates' magnitude) to cover the transformation's error.
_TRANSFORM_MARGIN = 1e-6

#: Projected CRS: a metre of distance in a UTM zone is taken as up to this many metres of
#: the CRS, or 1.25 times the CRS's largest scale factor over the layers' extent when that is
#: larger (``_largest_scale``: Web Mercator north of 60°).
_SCALE_SAFETY = 2.0

_METRES_PER_DEGREE = 110_574.0  # a degree of latitude at the equator, the shortest


@dataclass(frozen=True)
class WorkUnit:
    """Rows of one work unit: int64 input positions, increasing, of the reference rows
    (ignore regions included) and of the predicted rows."""

    reference_rows: np.ndarray
    predicted_rows: np.ndarray

    @property
    def n(self) -> int:
        return len(self.reference_rows) + len(self.predicted_rows)


def reach_m(options: stages.Options) -> float:
    """How far (m) a row's numbers can look into the other layer: the boundary tolerance
    times the largest multiple of the curve, 0 without a tolerance."""
    if options.boundary_tolerance_m is None:
        return 0.0
    multiples = options.tolerance_multiples or (1.0,)
    return options.boundary_tolerance_m * max(1.0, max(float(m) for m in multiples))


def split_units(rows: stages.Rows, options: stages.Options,
                max_features: int = UNIT_FEATURES) -> list[WorkUnit]:
    """Stage 0 of a unit-by-unit run: the rows as work units of whole components.

    Returns units covering every row exactly once (rows without a geometry are singletons
    packed with the others). Raises ValueError when max_features < 1.
    """
    if int(max_features) < 1:
        raise ValueError(f"max_features must be >= 1, got {max_features!r}")
    n_ref, n_pred = len(rows.reference), len(rows.predicted)
    ref_boxes, pred_boxes = _boxes(rows, options)
    labels = _components(ref_boxes, pred_boxes, options)
    centre = np.concatenate([ref_boxes, pred_boxes])
    centre = np.column_stack([(centre[:, 0] + centre[:, 2]) / 2, (centre[:, 1] + centre[:, 3]) / 2])
    order = _sweep_order(labels, centre)
    sizes = np.bincount(labels)
    units, current, count = [], [], 0
    for component in order:
        if current and count + sizes[component] > max_features:
            units.append(current)
            current, count = [], 0
        current.append(component)
        count += sizes[component]
    if current:
        units.append(current)
    unit_of_component = np.empty(len(sizes), dtype=np.int64)
    for k, components in enumerate(units):
        unit_of_component[components] = k
    unit_of = unit_of_component[labels]
    out = []
    for k in range(len(units)):
        members = np.flatnonzero(unit_of == k)
        out.append(WorkUnit(members[members < n_ref],
                            members[members >= n_ref] - n_ref))
    if n_ref + n_pred == 0:
        out = [WorkUnit(np.zeros(0, np.int64), np.zeros(0, np.int64))]
    return out


def check_unit_memory(rows: stages.Rows, unit: WorkUnit) -> None:
    """Stop before a unit that would need more memory than the budget
    (``util.memory``, ``IOU_EVALUATION_MEMORY_LIMIT_MB``), naming its largest features.

    Raises:
        InsufficientMemoryError: with the unit's row count and its three largest rows.
    """
    ref_v = num_coordinates_of(rows.reference, unit.reference_rows)
    pred_v = num_coordinates_of(rows.predicted, unit.predicted_rows)

    def what():
        largest = sorted(
            [(int(v), f"reference row {int(r)}") for v, r in zip(ref_v, unit.reference_rows)]
            + [(int(v), f"predicted row {int(p)}") for v, p in zip(pred_v, unit.predicted_rows)],
            reverse=True,
        )[:3]
        return (f"a work unit of {unit.n:,} overlapping or nearby features (largest: "
                + ", ".join(f"{name}, {v:,} vertices" for v, name in largest) + ")")

    check_memory("work unit", float(ref_v.sum() + pred_v.sum()) * _BYTES_PER_VERTEX, what)


@dataclass(frozen=True)
class UnitResult:
    """The compact arrays of one evaluated unit (``evaluate_unit``); positions are local to
    the unit's rows unless said. Picklable, for executors in other processes."""

    layers: tuple  # (reference, ignore, predicted): PreparedLayer without geometries
    # Per layer: (positions among its rows, geometries) of the rows whose repaired source is
    # not the input geometry itself (``_replaced_sources``); the others are the input's.
    replaced_sources: tuple
    pairs: OverlapPairs
    candidates: OverlapPairs | None  # None: the pairs themselves (no class rule)
    reference_match: np.ndarray
    predicted_match: np.ndarray
    coverage: np.ndarray
    reference_columns: dict  # the boundary columns of the per-reference table
    predicted_columns: dict
    zones: list
    bounds: np.ndarray
    area_change: float | None
    curve_lengths: tuple | None
    ap: tuple | None  # (pred area, ref+ignore area, pair pred, pair ref, pair iou)


def evaluate_unit(rows: stages.Rows, options: stages.Options, curve: bool = False,
                  ap: bool = False) -> UnitResult:
    """The geometry stages of ``evaluate`` on one unit's rows (``Rows.subset``): prepare,
    candidate pairs, match, boundary metrics, and with ``curve`` the boundary lengths at every
    multiple of the tolerance, with ``ap`` COCO's candidate IoUs. Module-level and
    picklable, so any executor (threads, processes, a Dask cluster) can run it."""
    progress = Progress()
    layers = stages.prepare_layers(rows, options, progress)
    found = stages.candidate_pairs(layers, rows, options, None)
    matched = stages.match_pairs(found, layers, rows, options)
    ref, ignore, pred = layers.reference, layers.ignore, layers.predicted
    tables = stages._tables(ref, pred, found.pairs, matched.matches, matched.ignored,
                            options.iou_threshold)
    before_r, before_p = set(tables.reference), set(tables.predicted)
    zones, zoned = stages.measure_boundaries(layers, tables, options, progress)
    lengths = None
    if curve:
        tolerances = [options.boundary_tolerance_m * float(m)
                      for m in options.tolerance_multiples]
        lengths = tolerance_lengths_in_utm_at(zoned[0], zoned[1], tolerances)
    ap_pairs = None
    if ap:
        references = np.concatenate([ref.overlay, ignore.overlay])

        def both(labels):
            return None if labels is None else np.concatenate(
                [labels[ref.keep], labels[ignore.keep]])

        ap_pairs = candidate_ious(
            pred.overlay, references,
            predicted_class=None if rows.predicted_class is None
            else rows.predicted_class[pred.keep],
            reference_class=both(rows.reference_class),
            predicted_group=None if rows.predicted_group is None
            else rows.predicted_group[pred.keep],
            reference_group=both(rows.reference_group),
            reference_ignore=np.r_[np.zeros(ref.n, dtype=bool), np.ones(ignore.n, dtype=bool)],
            class_ancestors=options.ancestors or None,
            area=None if pred.lonlat is None else pred.area_of,
        )
    return UnitResult(
        layers=tuple(_compact(layer) for layer in (ref, ignore, pred)),
        replaced_sources=(_replaced_sources(ref, rows.reference),
                          _replaced_sources(ignore, rows.reference),
                          _replaced_sources(pred, rows.predicted)),
        pairs=found.pairs,
        candidates=None if found.candidates is found.pairs else found.candidates,
        reference_match=matched.matches.reference_match,
        predicted_match=matched.matches.predicted_match,
        coverage=matched.coverage,
        reference_columns={k: v for k, v in tables.reference.items() if k not in before_r},
        predicted_columns={k: v for k, v in tables.predicted.items() if k not in before_p},
        zones=zones,
        bounds=stages._total_bounds(layers),
        area_change=worst_area_change(
            options.equal_area_crs, [ref.overlay, ignore.overlay, pred.overlay], layers.lonlat
        ),
        curve_lengths=lengths,
        ap=ap_pairs,
    )


def evaluate_in_units(rows: stages.Rows, options: stages.Options, progress: Progress,
                      executor=None, max_features: int = UNIT_FEATURES) -> stages.Evaluation:
    """``evaluate`` unit by unit (``split_units``), with identical results.

    Args:
        executor: None (units one after the other, each on both cores), or any object whose
            ``submit(fn, *args)`` returns a future with ``result()`` (a
            ``concurrent.futures.Executor``, a ``distributed.Client``).
        max_features: rows per unit (``UNIT_FEATURES``).

    Returns:
        An Evaluation whose ``reference`` and ``predicted`` hold their repaired ``source``
        geometries but no equal-area ones (``geometries`` and ``lonlat`` are None).

    Raises:
        InsufficientMemoryError: a unit larger than the memory budget, before it is read.
    """
    progress.checkpoint(0, "Splitting into work units")
    units = split_units(rows, options, max_features)
    allocator.release()  # the envelopes' and the candidate graph's
    for unit in units:
        check_unit_memory(rows, unit)
    curve = bool(options.tolerance and options.tolerance_multiples)
    want_ap = rows.scores is not None
    progress.checkpoint(1, f"Evaluating {len(units):,} work units")
    quiet = _Quiet()
    prepare_logger.addFilter(quiet)  # the counts are logged once, for the whole run
    results = _ResultSpill()
    try:
        sources = _Sources(rows)
        _run_units(units, rows, options, curve, want_ap, progress.span(1, 75), executor,
                   results, sources)
        return _conclude(units, results, rows, options, curve, progress, executor, sources)
    finally:
        results.close()
        prepare_logger.removeFilter(quiet)


def _replaced_sources(layer: PreparedLayer, given: np.ndarray):
    """(positions among the layer's rows, geometries) of its rows whose repaired source is
    not the very geometry it was given (``given[layer.keep]``): repaired, made 2D, made
    continuous across the antimeridian. Every other row's source is its input geometry, so
    a run writes it from the input (``_Sources``) rather than storing it again."""
    same = np.fromiter(map(operator.is_, layer.source, given[layer.keep]), dtype=bool,
                       count=layer.n)
    at = np.flatnonzero(~same)
    return at, layer.source[at]


class _Quiet(logging.Filter):
    """Drops the per-unit row counts of ``prepare_layer`` (the whole run's are logged)."""

    def filter(self, record) -> bool:
        return getattr(record, "whole_run", False) or not record.msg.startswith(
            ("%d of %s %s not evaluated", "%s %s and"))


def _run_units(units, rows, options, curve, want_ap, advance, executor, results, sources):
    """Evaluate every unit (in order, or on the executor: at most a few in flight), adding
    each result to ``results`` (``_ResultSpill``) in unit order as it is collected, its
    source geometries to ``sources`` (``_Sources``), and reporting progress per finished
    unit."""
    total = max(sum(u.n for u in units), 1)
    done = 0

    def collect(k, result):
        nonlocal done
        results.add(sources.keep(result, units[k]))
        del result
        allocator.release()  # the unit's working memory, before the next unit's
        done += units[k].n
        advance(done / total)

    if executor is None:
        for k, unit in enumerate(units):
            collect(k, evaluate_unit(rows.subset(unit.reference_rows, unit.predicted_rows),
                                     options, curve, want_ap))
        return
    # At most IN_FLIGHT units submitted and not yet collected: the units' rows are copied
    # for the workers when submitted, so memory holds a few units' beyond the layers.
    futures = {}
    try:
        for k, unit in enumerate(units):
            futures[k] = executor.submit(
                evaluate_unit, rows.subset(unit.reference_rows, unit.predicted_rows), options,
                curve, want_ap,
            )
            if len(futures) < IN_FLIGHT and k + 1 < len(units):
                continue
            while futures and (len(futures) >= IN_FLIGHT or k + 1 == len(units)):
                first = min(futures)
                collect(first, futures.pop(first).result())
    finally:
        for future in futures.values():
            future.cancel()


class _ResultSpill:
    """The units' results (``UnitResult``, source geometries taken out), on disk as they
    are collected, each array pickled by itself: memory holds the units in flight rather
    than every unit's arrays (about 0.5 KB per field), and the reassembly reads back one
    array of every unit at a time. A sequence of results (``_SpilledResult``), unit order."""

    def __init__(self):
        self._file = SpillFile(None)
        self._index = []  # per unit: field -> (offset, length), or {key: (offset, length)}

    def add(self, result: UnitResult) -> None:
        entry = {}
        for f in dataclasses.fields(result):
            value = getattr(result, f.name)
            entry[f.name] = ({key: self._write(v) for key, v in value.items()}
                             if isinstance(value, dict) else self._write(value))
        self._index.append(entry)

    def _write(self, value) -> tuple[int, int]:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        return self._file.write(data), len(data)

    def read(self, where: tuple[int, int]):
        # Bytes this process wrote to its own unnamed temporary file, never outside input.
        return pickle.loads(self._file.read(*where))  # nosec B301

    def __len__(self) -> int:
        return len(self._index)

    def __getitem__(self, k: int) -> "_SpilledResult":
        return _SpilledResult(self, self._index[k])

    def __iter__(self):
        return (self[k] for k in range(len(self)))

    def close(self) -> None:
        self._file.close()


class _SpilledResult:
    """One unit's result read back field by field (``r.pairs`` reads the unit's pairs); a
    dict field reads back key by key (``_SpilledColumns``)."""

    def __init__(self, spill: _ResultSpill, entry: dict):
        self._spill, self._entry = spill, entry

    def __getattr__(self, name):
        try:
            where = self._entry[name]
        except KeyError:
            raise AttributeError(name) from None
        if isinstance(where, dict):
            return _SpilledColumns(self._spill, where)
        return self._spill.read(where)


class _SpilledColumns:
    """A spilled dict of columns: its keys, and each column read when asked for."""

    def __init__(self, spill: _ResultSpill, where: dict):
        self._spill, self._where = spill, where

    def __iter__(self):
        return iter(self._where)

    def __getitem__(self, key):
        return self._spill.read(self._where[key])


class _Sources:
    """The repaired source geometries of the evaluated rows (reference fields, ignore regions,
    predictions; the TP/FP/FN outputs are written from them): the input geometries, except
    the few rows each unit changed (``UnitResult.replaced_sources``), which are taken out of
    each result as it is collected: written to disk beside a stored input (a ``sibling`` of
    its store, so a layer's sources are a view of the input, 8 B a row), else kept as the
    units' arrays."""

    def __init__(self, rows: stages.Rows):
        self.inputs = (rows.reference, rows.reference, rows.predicted)
        self.stores = tuple(
            given.sibling() if isinstance(given, StoredGeometries) else None
            for given in self.inputs)
        self.parts = ([], [], [])  # per layer, per unit: replaced geometries (arrays)
        self.replaced = ([], [], [])  # per layer, per unit: their input positions

    def keep(self, result: UnitResult, unit: WorkUnit) -> UnitResult:
        for k, (layer, (at, geometries)) in enumerate(zip(result.layers,
                                                          result.replaced_sources)):
            given = unit.predicted_rows if k == 2 else unit.reference_rows
            self.replaced[k].append(given[layer.keep[at]])
            if self.stores[k] is not None:
                self.stores[k].append(geometries)
            else:
                self.parts[k].append(geometries)
        return dataclasses.replace(result, replaced_sources=None)

    def of_layer(self, which: int, keep: np.ndarray):
        """The sources of layer ``which`` (0 reference, 1 ignore regions, 2 predicted) at
        ``keep``: int64 input positions of its evaluated rows, increasing."""
        replaced = np.concatenate(self.replaced[which] + [np.zeros(0, np.int64)])
        at = np.searchsorted(keep, replaced)
        if not np.array_equal(keep[np.minimum(at, len(keep) - 1)], replaced):
            raise RuntimeError("a replaced source is not among the layer's evaluated rows")
        given = self.inputs[which]
        if self.stores[which] is not None:
            return given.view(keep, replaced=(at, self.stores[which],
                                              np.arange(len(replaced))) if len(at) else None)
        out = take(given, keep)
        out[at] = np.concatenate(self.parts[which] + [np.zeros(0, dtype=object)])
        return out


def _conclude(units, results, rows, options, curve_wanted, progress, executor, sources):
    """Reassemble the units' arrays in one-piece order and run the global stages."""
    ref, ref_pos = _assemble_layer(results, units, 0, rows, "reference",
                                   lambda u: u.reference_rows, np.flatnonzero(~rows.ignore),
                                   sources)
    ignore, ignore_pos = _assemble_layer(results, units, 1, rows, "reference",
                                         lambda u: u.reference_rows, np.flatnonzero(rows.ignore),
                                         sources)
    pred, pred_pos = _assemble_layer(results, units, 2, rows, "predicted",
                                     lambda u: u.predicted_rows, np.arange(len(rows.predicted)),
                                     sources)
    layers = stages.Layers(ref, ignore, pred, None)
    for layer in (ref, ignore, pred):
        log_counts(layer, extra={"whole_run": True})
    pairs = _assemble_pairs([r.pairs for r in results], ref_pos, pred_pos)
    candidates = pairs
    if rows.reference_class is not None:  # else every unit's candidates are its pairs
        candidates = _assemble_pairs([r.candidates for r in results], ref_pos, pred_pos)
    found = stages.Candidates(pairs, candidates)
    matches = match(candidates, ref.n, pred.n, options.iou_threshold, options.matching)
    _check_matches(matches, results, ref_pos, pred_pos)
    coverage = _scatter([r.coverage for r in results], pred_pos, pred.n, 0.0)
    ignored = ((matches.predicted_match < 0)
               & stages.at_or_above(coverage, options.iou_threshold) & (coverage > 0))
    matched = stages.Matched(matches, coverage, ignored)
    tables = stages._tables(ref, pred, pairs, matches, ignored, options.iou_threshold)
    for name in list(results[0].reference_columns):
        tables.reference[name] = _scatter([r.reference_columns[name] for r in results],
                                          ref_pos, ref.n)
    for name in list(results[0].predicted_columns):
        tables.predicted[name] = _scatter([r.predicted_columns[name] for r in results],
                                          pred_pos, pred.n)
    zones = sorted({int(z) for r in results for z in r.zones})
    bounds = np.array([np.fmin.reduce([r.bounds[i] for r in results]) for i in (0, 1)]
                      + [np.fmax.reduce([r.bounds[i] for r in results]) for i in (2, 3)])
    warnings = area_change_warnings(options.equal_area_crs,
                                    _worst([r.area_change for r in results]))
    warnings += stages._data_warnings(ref, ignore, pred, options.equal_area_crs, bounds)
    warnings += stages._empty_layer_warnings(len(rows.reference), len(rows.predicted))
    progress.checkpoint(75, "Summarising")
    curve = None
    if curve_wanted:
        progress.checkpoint(76, "Boundary F1 at larger tolerances")
        curve = _curve(units, results, rows, options, ignored, ref_pos, pred_pos, executor)
    ap = None
    if rows.scores is not None:
        ap = lambda: _average_precision(results, rows, options, layers, ref_pos,  # noqa: E731
                                        ignore_pos, pred_pos)
    return stages.conclude(layers, rows, options, found, matched, tables, zones, warnings,
                           curve, ap, progress)


def _worst(values):
    """The maximum of the units' ``worst_area_change`` values, as over the whole run."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    finite = [v for v in values if math.isfinite(v)]
    return max(finite) if finite else float("nan")


def _compact(layer: PreparedLayer) -> PreparedLayer:
    """The layer without its geometries (positions, areas and drop reasons stay; the
    repaired sources that differ from the input go in ``UnitResult.replaced_sources``)."""
    return dataclasses.replace(layer, source=None, geometries=None, lonlat=None)


def _assemble_layer(results, units, which, rows, name, unit_rows, layer_rows, sources):
    """One prepared layer of the whole run from the units' (``which``: 0 reference, 1 ignore
    regions, 2 predicted), and per unit the global position of each of its local positions.

    ``units``: the ``WorkUnit`` of each result; ``unit_rows(unit)``: the unit's input rows
    of this layer's input; ``layer_rows``: input positions of every row this layer was
    prepared from, increasing; ``sources``: the units' source geometries (``_Sources``)."""
    keeps, areas, positions = [], [], []
    drop_reason = np.full(len(layer_rows), "", dtype=object)
    n_repaired = 0
    for r, unit in zip(results, units):
        layer = r.layers[which]
        given = unit_rows(unit)
        keeps.append(given[layer.keep])  # keep: positions among the unit's rows of the layer
        if which < 2:
            given = given[rows.ignore[given] == (which == 1)]
        areas.append(layer.area_m2)
        drop_reason[np.searchsorted(layer_rows, given)] = layer.drop_reason
        n_repaired += layer.n_repaired
    keep = np.concatenate(keeps + [np.zeros(0, np.int64)]).astype(np.int64)
    order = np.argsort(keep, kind="stable")
    rank = np.empty(len(keep), dtype=np.int64)
    rank[order] = np.arange(len(keep))
    start = 0
    for k in keeps:
        positions.append(rank[start:start + len(k)])
        start += len(k)
    area = np.concatenate(areas + [np.zeros(0)])[order]
    keep = keep[order]
    source = sources.of_layer(which, keep)
    template = results[0].layers[which]
    layer = PreparedLayer(
        name=name, keep=keep, source=source, geometries=None, area_m2=area,
        crs=template.crs, n_input=len(layer_rows),
        n_dropped=int(np.count_nonzero(drop_reason != "")), n_repaired=n_repaired,
        drop_reason=drop_reason, lonlat=None, area_of=template.area_of,
    )
    return layer, positions


def _assemble_pairs(parts, ref_pos, pred_pos) -> OverlapPairs:
    """The units' pairs in global positions, sorted by reference then prediction."""
    reference = np.concatenate([ref_pos[k][p.reference] for k, p in enumerate(parts)]
                               + [np.zeros(0, np.int64)])
    predicted = np.concatenate([pred_pos[k][p.predicted] for k, p in enumerate(parts)]
                               + [np.zeros(0, np.int64)])
    order = np.lexsort((predicted, reference))

    def cat(name, dtype):
        return np.concatenate([getattr(p, name) for p in parts] + [np.zeros(0, dtype)])[order]

    bounded = None
    if any(p.bounded is not None for p in parts):
        bounded = np.concatenate([
            p.bounded if p.bounded is not None else np.zeros(p.n, dtype=bool) for p in parts
        ])[order]
    return OverlapPairs(reference[order], predicted[order], cat("intersection_m2", float),
                        cat("iou", float), bounded)


def _scatter(parts, positions, n, fill=None):
    """Per-row arrays of the units into one array of n rows (global positions)."""
    first = next((p for p in parts if len(p)), parts[0] if parts else np.zeros(0))
    out = np.empty(n, dtype=np.asarray(first).dtype)
    if fill is not None:
        out[:] = fill
    for part, pos in zip(parts, positions):
        out[pos] = part
    return out


def _check_matches(matches, results, ref_pos, pred_pos) -> None:
    """The global matching equals the units' (the decomposition the module relies on)."""
    for k, r in enumerate(results):
        local = r.reference_match
        expected = np.full(len(local), -1, dtype=np.int64)
        expected[local >= 0] = pred_pos[k][local[local >= 0]]
        if not np.array_equal(matches.reference_match[ref_pos[k]], expected):
            raise RuntimeError(f"work unit {k}: its matching differs from the whole run's")


def _curve(units, results, rows, options, ignored, ref_pos, pred_pos, executor) -> dict:
    """The boundary curve: from the units' lengths, or on the global sample (second pass
    over the units that hold sampled rows)."""
    tolerances = [options.boundary_tolerance_m * float(m) for m in options.tolerance_multiples]
    n_ref, n_pred = sum(len(p) for p in ref_pos), sum(len(p) for p in pred_pos)
    counted_rows = np.flatnonzero(~ignored)
    if max(n_ref, len(counted_rows)) <= CURVE_SAMPLE_SIZE:
        k_tol = len(tolerances)
        lengths = [r.curve_lengths for r in results]
        within_ref = [_scatter([x[0][j] for x in lengths], ref_pos, n_ref) for j in range(k_tol)]
        perimeter_ref = _scatter([x[1] for x in lengths], ref_pos, n_ref)
        within_pred = [_scatter([x[2][j] for x in lengths], pred_pos, n_pred)
                       for j in range(k_tol)]
        perimeter_pred = _scatter([x[3] for x in lengths], pred_pos, n_pred)
        return curve_from_lengths(
            (within_ref, perimeter_ref, within_pred, perimeter_pred), ~ignored, n_ref,
            options.tolerance_multiples, tolerances, None)
    rng = np.random.default_rng(CURVE_SAMPLE_SEED)
    ref_rows = draw_sample(rng, np.arange(n_ref), CURVE_SAMPLE_SIZE)
    pred_rows = draw_sample(rng, counted_rows, CURVE_SAMPLE_SIZE)
    ref_unit, ref_local = _locate(ref_pos, n_ref)
    pred_unit, pred_local = _locate(pred_pos, n_pred)
    wanted = sorted(set(ref_unit[ref_rows].tolist()) | set(pred_unit[pred_rows].tolist()))
    jobs = []
    for k in wanted:
        mine_r = np.sort(ref_local[ref_rows[ref_unit[ref_rows] == k]])
        mine_p = np.sort(pred_local[pred_rows[pred_unit[pred_rows] == k]])
        unit = units[k]
        args = (rows.subset(unit.reference_rows, unit.predicted_rows), options, mine_r, mine_p)
        jobs.append(executor.submit(sample_lengths, *args) if executor is not None
                    else _Done(sample_lengths(*args)))
    parts = {k: job.result() for k, job in zip(wanted, jobs)}
    k_tol = len(tolerances)
    within_ref = np.zeros((k_tol, len(ref_rows)))
    perimeter_ref = np.zeros(len(ref_rows))
    within_pred = np.zeros((k_tol, len(pred_rows)))
    perimeter_pred = np.zeros(len(pred_rows))
    for k, (wr, pr, wp, pp) in parts.items():
        at = np.flatnonzero(ref_unit[ref_rows] == k)
        within_ref[:, at], perimeter_ref[at] = np.asarray(wr).reshape(k_tol, -1), pr
        at = np.flatnonzero(pred_unit[pred_rows] == k)
        within_pred[:, at], perimeter_pred[at] = np.asarray(wp).reshape(k_tol, -1), pp
    sample = {"reference": int(len(ref_rows)), "predicted": int(len(pred_rows)),
              "reference_of": int(n_ref), "predicted_of": int(len(counted_rows)),
              "seed": CURVE_SAMPLE_SEED}
    return curve_from_lengths(
        (list(within_ref), perimeter_ref, list(within_pred), perimeter_pred),
        np.ones(len(pred_rows), dtype=bool), n_ref, options.tolerance_multiples,
        tolerances, sample)


def sample_lengths(rows: stages.Rows, options: stages.Options, reference_rows, predicted_rows):
    """The curve's lengths of a unit's sampled rows (positions among its evaluated rows),
    each against every polygon of the other layer in the unit (all those near it)."""
    progress = Progress()
    layers = stages.prepare_layers(rows, options, progress)
    ref, pred = layers.reference, layers.predicted
    crss = (options.reference_crs, options.predicted_crs, options.equal_area_crs)
    ref_zoned = stages.zoned_layer(ref.source, crss[0], stages._zones(ref, crss[2]))
    pred_zoned = stages.zoned_layer(pred.source, crss[1], stages._zones(pred, crss[2]))
    tolerances = [options.boundary_tolerance_m * float(m) for m in options.tolerance_multiples]
    reach = max(tolerances)
    within_ref, perimeter_ref = sampled_side(ref_zoned, pred_zoned, reference_rows, tolerances,
                                             reach, None, first=True)
    within_pred, perimeter_pred = sampled_side(pred_zoned, ref_zoned, predicted_rows,
                                               tolerances, reach, None, first=False)
    return within_ref, perimeter_ref, within_pred, perimeter_pred


class _Done:
    """A finished future."""

    def __init__(self, value):
        self._value = value

    def result(self):
        return self._value


def _locate(positions, n):
    """Per global position: its unit and its local position there."""
    unit = np.empty(n, dtype=np.int64)
    local = np.empty(n, dtype=np.int64)
    for k, pos in enumerate(positions):
        unit[pos] = k
        local[pos] = np.arange(len(pos))
    return unit, local


def _average_precision(results, rows, options, layers, ref_pos, ignore_pos, pred_pos) -> dict:
    """COCO AP from the units' candidate IoUs (average_precision with ``precomputed``)."""
    ref, ignore, pred = layers.reference, layers.ignore, layers.predicted
    n_ref = ref.n
    pred_area = np.empty(pred.n)
    both_area = np.zeros(ref.n + ignore.n)
    pair_pred, pair_ref, pair_iou = [], [], []
    for k, r in enumerate(results):
        ap = r.ap  # (pred area, ref+ignore area, pair pred, pair ref, pair iou)
        pred_area[pred_pos[k]] = ap[0]
        n_local = len(ref_pos[k])
        both_area[ref_pos[k]] = ap[1][:n_local]
        both_area[n_ref + ignore_pos[k]] = ap[1][n_local:]
        local_ref = ap[3]
        is_ref = local_ref < n_local
        glob = np.empty(len(local_ref), dtype=np.int64)
        glob[is_ref] = ref_pos[k][local_ref[is_ref]]
        glob[~is_ref] = n_ref + ignore_pos[k][local_ref[~is_ref] - n_local]
        pair_pred.append(pred_pos[k][ap[2]])
        pair_ref.append(glob)
        pair_iou.append(ap[4])
    precomputed = (pred_area, both_area, np.concatenate(pair_pred + [np.zeros(0, np.int64)]),
                   np.concatenate(pair_ref + [np.zeros(0, np.int64)]).astype(np.int64),
                   np.concatenate(pair_iou + [np.zeros(0)]))
    return stages._average_precision(
        ref, ignore, pred, rows.scores[pred.keep], (rows.reference_group, rows.predicted_group),
        (rows.reference_class, rows.predicted_class), options.ancestors,
        planar=options.equal_area_crs is None, precomputed=precomputed,
    )


# --- envelopes and components --------------------------------------------------------------


def _boxes(rows: stages.Rows, options: stages.Options):
    """Envelopes (n, 4) of both layers' rows in the reference CRS's frame, widened by the
    reach; NaN for rows without a geometry."""
    ref_crs, pred_crs = options.reference_crs, options.predicted_crs
    ref_boxes = _read_boxes(rows.reference, ref_crs)
    pred_boxes = _read_boxes(rows.predicted, pred_crs)
    if ref_crs is not None and pred_crs is not None and not ref_crs.equals(pred_crs):
        pred_boxes = _transformed_boxes(pred_boxes, pred_crs, ref_crs)
    reach = reach_m(options)
    dx, dy = _reach(ref_crs, reach, np.concatenate([ref_boxes, pred_boxes]))
    ref_boxes = ref_boxes + np.array([-dx, -dy, dx, dy])
    return ref_boxes, pred_boxes


def _read_boxes(geometries, crs) -> np.ndarray:
    """Envelopes (n, 4) of the rows as preparation reads them (``stored.envelopes``, every
    ring counted). In a geographic CRS a row whose longitudes span more than half a turn is
    read by ``prepare.read_lonlat`` first: it closes a ring drawn round a pole through the
    pole (drawn, its envelope is a band of no height, which would meet nothing) and makes a
    ring across ±180° continuous."""
    boxes = bounds_of(geometries)
    if crs is None or not crs.is_geographic or not len(boxes):
        return boxes
    half_turn = half_turn_of(crs)
    with np.errstate(invalid="ignore"):
        wide = np.flatnonzero(boxes[:, 2] - boxes[:, 0] > half_turn)
    if len(wide):
        boxes = boxes.copy()  # a store's own column otherwise
        boxes[wide] = envelopes(read_lonlat(take(geometries, wide), half_turn))
    return boxes


def _transformed_boxes(boxes, source, target):
    """Boxes transformed with 41 points per edge, widened by twice the largest bend of an
    edge's image between two of every other point (how far the image of the point between
    them lies from their chord: the image between 41 points bends less) and by
    ``_TRANSFORM_MARGIN``."""
    out = np.full_like(boxes, np.nan)
    ok = np.isfinite(boxes).all(axis=1)
    if not ok.any():
        return out
    b = boxes[ok]
    t = np.linspace(0.0, 1.0, 41)
    xs = np.stack([b[:, [0]] + (b[:, [2]] - b[:, [0]]) * t, b[:, [2]] + 0 * t,
                   b[:, [0]] + (b[:, [2]] - b[:, [0]]) * t, b[:, [0]] + 0 * t], axis=1)
    ys = np.stack([b[:, [1]] + 0 * t, b[:, [1]] + (b[:, [3]] - b[:, [1]]) * t,
                   b[:, [3]] + 0 * t, b[:, [1]] + (b[:, [3]] - b[:, [1]]) * t], axis=1)
    transformer = pyproj.Transformer.from_crs(source, target, always_xy=True)
    x, y = transformer.transform(xs, ys)
    x, y = np.asarray(x), np.asarray(y)  # (n, 4 edges, 41 points)
    with np.errstate(invalid="ignore"):
        bend = np.hypot(x[:, :, 1::2] - (x[:, :, :-1:2] + x[:, :, 2::2]) / 2,
                        y[:, :, 1::2] - (y[:, :, :-1:2] + y[:, :, 2::2]) / 2)
        bend = np.nanmax(bend.reshape(len(b), -1), axis=1)
        x, y = x.reshape(len(b), -1), y.reshape(len(b), -1)
        lo_x, hi_x = np.nanmin(x, axis=1), np.nanmax(x, axis=1)
        lo_y, hi_y = np.nanmin(y, axis=1), np.nanmax(y, axis=1)
    size = np.maximum(hi_x - lo_x, hi_y - lo_y)
    pad = _TRANSFORM_MARGIN * (size + np.abs(lo_x) + np.abs(lo_y) + 1.0) + 2.0 * bend
    widened = np.column_stack([lo_x - pad, lo_y - pad, hi_x + pad, hi_y + pad])
    # Not transformable: a box over everything (one unit with every row: exact, slow).
    widened[~np.isfinite(widened).all(axis=1)] = [-1e300, -1e300, 1e300, 1e300]
    out[ok] = widened
    return out


def _reach(crs, reach: float, boxes):
    """The reach in the CRS's units along x and y (generous: more rows in a unit cost time,
    never a value)."""
    if reach == 0.0:
        return 0.0, 0.0
    if crs is None:
        return reach, reach
    factor = float(crs.axis_info[0].unit_conversion_factor)
    if crs.is_geographic:
        unit_deg = math.degrees(factor)
        dy = reach / _METRES_PER_DEGREE / unit_deg * 1.01
        lat = np.nanmax(np.abs(boxes[:, [1, 3]]), initial=0.0) * unit_deg + 1.0
        if lat >= 90.0:  # within a degree of a pole: every longitude may be near
            return 360.0 / unit_deg, dy
        return dy / math.cos(math.radians(lat)), dy
    d = reach / factor * max(_SCALE_SAFETY, 1.25 * _largest_scale(crs, boxes))
    return d, d


def _largest_scale(crs, boxes) -> float:
    """The largest scale factor (CRS distance per ground distance, along a meridian or a
    parallel) of a projected CRS at 33 × 33 points over the boxes' extent (Web Mercator:
    2.0 at 60°, 3.9 at 75°); 0 where PROJ cannot say."""
    finite = boxes[np.isfinite(boxes).all(axis=1) & (np.abs(boxes) < 1e290).all(axis=1)]
    if not len(finite):
        return 0.0
    x = np.linspace(finite[:, 0].min(), finite[:, 2].max(), 33)
    y = np.linspace(finite[:, 1].min(), finite[:, 3].max(), 33)
    gx, gy = (v.ravel() for v in np.meshgrid(x, y))
    try:
        to_lonlat = pyproj.Transformer.from_crs(crs, crs.geodetic_crs, always_xy=True)
        lon, lat = to_lonlat.transform(gx, gy)
        factors = pyproj.Proj(crs).get_factors(lon, lat, errcheck=False)
        scale = np.concatenate([np.asarray(factors.meridional_scale, dtype=float),
                                np.asarray(factors.parallel_scale, dtype=float)])
    except Exception:  # noqa: BLE001 (no geodetic CRS, no projection: the safety alone)
        return 0.0
    scale = scale[np.isfinite(scale)]
    return float(scale.max()) if len(scale) else 0.0


def _components(ref_boxes, pred_boxes, options) -> np.ndarray:
    """Component label of each row (references first, then predictions)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n_ref, n_pred = len(ref_boxes), len(pred_boxes)
    ok_r = np.flatnonzero(~np.isnan(ref_boxes).any(axis=1))
    ok_p = np.flatnonzero(~np.isnan(pred_boxes).any(axis=1))
    query, owners = ref_boxes[ok_r], ok_r
    crs = options.reference_crs
    if crs is not None and crs.is_geographic and len(ok_r):
        # Longitudes run on past ±180° along a ring that crosses it: look a turn away too.
        turn = 360.0 / math.degrees(float(crs.axis_info[0].unit_conversion_factor))
        query = np.concatenate([query, query + [turn, 0, turn, 0], query - [turn, 0, turn, 0]])
        owners = np.concatenate([ok_r, ok_r, ok_r])
    i, j = _meeting_boxes(query, pred_boxes[ok_p])
    n = n_ref + n_pred
    graph = coo_matrix((np.ones(len(i), dtype=np.int8), (owners[i], n_ref + ok_p[j])),
                       shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    return labels


#: Query boxes per STRtree of ``_meeting_boxes``: its shapely boxes (about 400 bytes each,
#: with the tree) are made for a chunk at a time, never for a whole national layer.
_BOX_CHUNK = 50_000


def _meeting_boxes(query: np.ndarray, boxes: np.ndarray):
    """(i, j): every query box (float (n, 4), finite) meeting a box (float (m, 4), finite),
    as ``STRtree.query(..., predicate="intersects")`` on shapely boxes gives them, found
    chunk by chunk: query boxes in chunks of neighbours along a Z-order curve, each against
    a tree of the boxes that reach into the chunk's extent."""
    parts_i, parts_j = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    if not len(query) or not len(boxes):
        return parts_i[0], parts_j[0]
    centre = np.column_stack([(query[:, 0] + query[:, 2]) / 2, (query[:, 1] + query[:, 3]) / 2])
    lo, hi = centre.min(axis=0), centre.max(axis=0)
    with np.errstate(invalid="ignore", over="ignore"):
        grid = np.nan_to_num((centre - lo) / np.maximum(hi - lo, 1e-300) * 65535)
    order = np.argsort(_interleave(grid[:, 0].astype(np.int64))
                       | (_interleave(grid[:, 1].astype(np.int64)) << 1), kind="stable")
    for start in range(0, len(order), _BOX_CHUNK):
        rows = order[start:start + _BOX_CHUNK]
        chunk = query[rows]
        x0, y0 = chunk[:, 0].min(), chunk[:, 1].min()
        x1, y1 = chunk[:, 2].max(), chunk[:, 3].max()
        near = np.flatnonzero((boxes[:, 0] <= x1) & (boxes[:, 2] >= x0)
                              & (boxes[:, 1] <= y1) & (boxes[:, 3] >= y0))
        if not len(near):
            continue
        tree = shapely.STRtree(shapely.box(*boxes[near].T))
        i, j = tree.query(shapely.box(*chunk.T), predicate="intersects")
        parts_i.append(rows[i])
        parts_j.append(near[j])
    return np.concatenate(parts_i), np.concatenate(parts_j)


def _sweep_order(labels: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """Components in order of their first row's position on a Z-order curve of the
    envelopes' centres (rows without one last), so that a unit is compact in space."""
    n_comp = labels.max() + 1 if len(labels) else 0
    ok = np.isfinite(centre).all(axis=1)
    key = np.full(len(labels), np.iinfo(np.int64).max, dtype=np.int64)
    if ok.any():
        c = centre[ok]
        lo, hi = c.min(axis=0), c.max(axis=0)
        grid = ((c - lo) / np.maximum(hi - lo, 1e-300) * 65535).astype(np.int64)
        key[ok] = _interleave(grid[:, 0]) | (_interleave(grid[:, 1]) << 1)
    first = np.full(n_comp, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, labels, key)
    return np.lexsort((np.arange(n_comp), first))


def _interleave(v: np.ndarray) -> np.ndarray:
    """Spread the 16 low bits of v to the even bits (Morton code)."""
    v = v & 0xFFFF
    v = (v | (v << 8)) & 0x00FF00FF
    v = (v | (v << 4)) & 0x0F0F0F0F
    v = (v | (v << 2)) & 0x33333333
    return (v | (v << 1)) & 0x55555555
