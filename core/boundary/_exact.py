"""The exact boundary-distance solver: the integral of the distance over both boundaries, and
the Hausdorff distance, of each pair of a chunk, to the error bounds ``pair_boundary_distances``
states (boundary/distances.py, which cuts the pairs into chunks and calls ``pair_distances``).

Stages (``pair_distances``): each pair's frame; the target grid (the segments the distances are
measured to, in the frame, filed in a grid per pair and side whose cells follow the segments'
mean length); the integrated boundaries cut into pieces sorted by pair; then block by block of
pieces, the candidate search (``_piece_candidates``, or by spans of short pieces with a scale
factor: ``_span_candidates``) and the integration (``_refine``: one candidate exact, a few cut
where they cross, more bracketed and halved).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..geometry.segments import (
    SegmentGrid,
    Segments,
    axis_frame,
    budget_splits,
    frame_distance,
    frame_integral,
    frame_point_distance,
    group_ids,
    group_starts,
    hypot,
    quadratic_roots,
    ranges,
    regime_cuts,
    run_starts,
    segment_axes,
    segment_distance,
    split_segments,
)

#: The candidate search, and the envelopes, handle this many pieces at a time (a bound on
#: the memory of a search; a chunk's pieces usually fit in one).
_SEARCH_BATCH = 32_768
_ENVELOPE_BATCH = 65_536

#: The envelope of a batch handles its intervals, and its pieces, in blocks of about this
#: many (intervals, or cut points): their temporaries then stay in the cache.
_ENVELOPE_BLOCK = 65_536

#: Up to this many pieces with a few functions (after halving) go to the envelope at once,
#: padded to the widest.
_FEW_PIECES = 1024

#: A pair's cells are at least its extent / max(this, its number of segments), so a small
#: pair's grid has at most this² cells, and a large pair's cells follow its segments (the grid
#: is then sparse: ``SegmentGrid`` files the cells that hold pieces only).
_MAX_CELLS_PER_SIDE = 64

#: Pieces of a chunk are searched and integrated in blocks of at most this many (a large pair
#: is cut into blocks too), so the memory of a block is bounded whatever the pair's size.
_PIECE_BLOCK = 200_000
_MIN_PIECE_BLOCK = 1024
_FIRST_PIECE_BLOCK = 16_384

#: The integration of a block takes at most this many candidate rows at once; a block's
#: next one is sized for it. Where pieces are halved, a row takes some 350 bytes at the
#: peak (the children's rows and their distances): with 1,000,000 rows a spiky 64,000-vertex
#: pair took 360 MB (tracemalloc), over the stage's working budget; 222 MB with these.
_REFINE_ROWS = 400_000

#: ``_refine`` frames and sorts the rows of this many pieces at a time (their temporaries
#: then stay in the cache).
_REFINE_BLOCK = 32_768

#: A candidate search gathers at most this many (piece, segment) rows at once, and scans at
#: most this many rows of cells (a bound on its memory, some 200 bytes a row); a batch of
#: pieces that would need more is split before gathering.
_ROW_BUDGET = 1_000_000

#: Absolute slack, relative to a pair's extent, under which two distances count as equal when
#: candidates are discarded (discarding fewer candidates is always safe).
_SLACK = 1e-9

#: Segments shorter than this fraction of their pair's (or layer's) extent are dropped.
_TINY = 1e-12

#: Cell size of a pair's grid, as a multiple of the pair's mean segment length.
_CELL_FACTOR = 2.0

#: Longest piece, as a multiple of the pair's mean segment length (and at least a cell).
_PIECE_FACTOR = 2.0

#: The first search for a piece's candidates reaches half its length and this many cells
#: around it (and the whole pair at most); most pieces need no second search.
_FIRST_MARGIN = 0.1

#: Pieces with at most this many candidate rows are solved exactly (cut where the distance
#: functions cross) rather than bracketed and halved.
_EXACT_MAX_ROWS = 6

#: The pairs (i < j) of w rows, for w up to _EXACT_MAX_ROWS.
_PAIRS = {w: np.triu_indices(w, 1) for w in range(2, _EXACT_MAX_ROWS + 1)}

#: Relative slack for crossing points at the ends of the intervals where they are sought,
#: and for two distance functions to count as equal on an interval.
_ROOT_SLACK = 1e-9


@dataclass
class _Pieces:
    """Pieces of boundary, sorted by pair: from (x0, y0) to (x1, y1); ``weight``: None, or
    metres per CRS unit on each piece (1 / the local scale factor of a conformal CRS)."""

    x0: np.ndarray
    y0: np.ndarray
    x1: np.ndarray
    y1: np.ndarray
    pair: np.ndarray
    weight: np.ndarray | None = None

    def __getitem__(self, index) -> _Pieces:
        index = _positions(index)
        return _Pieces(self.x0[index], self.y0[index], self.x1[index], self.y1[index],
                       self.pair[index], None if self.weight is None else self.weight[index])


@dataclass
class _Rows:
    """Candidate rows (piece, segment) grouped by piece: the segment's distances to the
    piece's start and end, and to the whole piece."""

    piece: np.ndarray
    seg: np.ndarray
    d0: np.ndarray
    d1: np.ndarray
    dmin: np.ndarray

    def __getitem__(self, index) -> _Rows:
        index = _positions(index)
        return _Rows(self.piece[index], self.seg[index], self.d0[index], self.d1[index],
                     self.dmin[index])


def _positions(index):
    """Integer positions for an index (a boolean mask or positions): numpy gathers several
    arrays by one array of positions much faster than it applies the same mask to each."""
    index = np.asarray(index)
    return np.flatnonzero(index) if index.dtype == bool else index


@dataclass
class _Boundaries:
    """The segments of both boundaries of a chunk of pairs, each pair in its own frame.

    ``xy`` is a float array of shape (4, n): x0, y0, x1, y1 of each segment, stacked so that
    one ``np.take`` gathers all four (faster than four gathers).
    """

    xy: np.ndarray
    next: np.ndarray
    prev: np.ndarray
    slack: np.ndarray  # per pair: distances closer than this count as equal

    def __post_init__(self):
        # Bounding boxes (xmin, ymin, xmax, ymax), for the box tests of the candidate search.
        x0, y0, x1, y1 = self.xy
        self.box = np.stack([np.minimum(x0, x1), np.minimum(y0, y1),
                             np.maximum(x0, x1), np.maximum(y0, y1)])
        # Start, unit direction and length (``segment_axes``), for the rows' frames.
        self.axes = segment_axes(x0, y0, x1, y1)

    @property
    def n(self) -> int:
        return self.xy.shape[1]

    def rows_xy(self, seg):
        """x0, y0, x1, y1 of the segments ``seg``: a (4, len(seg)) array."""
        return np.take(self.xy, seg, axis=1)

    def rows_box(self, seg):
        """xmin, ymin, xmax, ymax of the segments ``seg``: a (4, len(seg)) array."""
        return np.take(self.box, seg, axis=1)


@dataclass(frozen=True)
class _PairFrames:
    """Each pair's frame: its lower-left corner (``lo_x``, ``lo_y``, the origin of its
    coordinates), its extent (float array, shape (n, 2)), largest side and diagonal."""

    lo_x: np.ndarray
    lo_y: np.ndarray
    extent: np.ndarray
    size: np.ndarray
    diag: np.ndarray


def _pair_frames(seg_r: Segments, seg_p: Segments, n: int) -> _PairFrames:
    lo_x = np.minimum(_least(seg_r.x0, seg_r.owner, n), _least(seg_p.x0, seg_p.owner, n))
    lo_y = np.minimum(_least(seg_r.y0, seg_r.owner, n), _least(seg_p.y0, seg_p.owner, n))
    hi_x = np.maximum(_most(seg_r.x0, seg_r.owner, n), _most(seg_p.x0, seg_p.owner, n))
    hi_y = np.maximum(_most(seg_r.y0, seg_r.owner, n), _most(seg_p.y0, seg_p.owner, n))
    extent = np.column_stack([hi_x - lo_x, hi_y - lo_y])
    return _PairFrames(lo_x, lo_y, extent, extent.max(axis=1),
                       hypot(extent[:, 0], extent[:, 1]))


def _framed_segments(seg_r: Segments, seg_p: Segments, frames: _PairFrames):
    """The segments of both sides in their pair's frame, without those shorter than
    ``_TINY`` of the pair's extent (distinct vertices that the frame's rounding merges, or
    subnormal coordinates; their neighbours are linked).

    Returns ``(xy, owner, side, next, prev, seg_len)``: xy a (4, k) float array (x0, y0, x1,
    y1), side 0 for the reference, 1 for the predicted; the links renumbered.
    """
    n_r = seg_r.n
    owner = np.r_[seg_r.owner, seg_p.owner]
    side = np.r_[np.zeros(n_r, np.int64), np.ones(seg_p.n, np.int64)]
    ox, oy = frames.lo_x[owner], frames.lo_y[owner]
    xy = np.empty((4, len(owner)))
    for k, (a, b, o) in enumerate(((seg_r.x0, seg_p.x0, ox), (seg_r.y0, seg_p.y0, oy),
                                   (seg_r.x1, seg_p.x1, ox), (seg_r.y1, seg_p.y1, oy))):
        xy[k, :n_r], xy[k, n_r:] = a, b
        xy[k] -= o
    del ox, oy
    x0, y0, x1, y1 = xy
    nxt = np.r_[seg_r.next, seg_p.next + n_r]
    prv = np.r_[seg_r.prev, seg_p.prev + n_r]
    seg_len = hypot(x1 - x0, y1 - y0)
    short = seg_len <= _TINY * frames.size[owner]
    if short.any():
        return _drop_short(short, xy, owner, side, nxt, prv, seg_len)
    return xy, owner, side, nxt, prv, seg_len


def pair_distances(
    segments: list, delta: np.ndarray, scale=None, scaled_piece=None, large_pair: int = 4096,
) -> tuple[np.ndarray, np.ndarray]:
    """Integral of the distance over both boundaries, and Hausdorff distance, of each pair.

    ``segments``: a list ``[seg_r, seg_p, target_r, target_p]``, emptied here (so that the
    segments are freed once framed): ``seg_r``, ``seg_p`` the segments of the chunk's pairs
    (owner = pair, 0..n-1; a pair present in one is present in both), integrated;
    ``target_r``, ``target_p`` the segments the distances are measured to (the same objects
    when not simplified). ``delta``: float array, shape (n,); ``scale``: see
    ``pair_boundary_distances``, with ``scaled_piece`` (float array, shape (n,):
    ``distances._scaled_piece``). ``large_pair``: pairs with more target segments than this
    are measured in blocks sized by a first small block (``_integrate``). Pairs without
    segments get 0.

    Returns ``(integral, hausdorff)``: float arrays, shape (n,), in CRS units (metres on the
    ellipsoid with ``scale``).

    Stages: the pairs' frames (``_pair_frames``); the target grid and the sorted pieces
    (``_solver``); the candidate search and the integration, block by block of pieces
    (``_integrate``).
    """
    n = len(delta)
    if any(part.n == 0 for part in segments):
        segments.clear()
        return np.zeros(n), np.zeros(n)
    frames = _pair_frames(segments[0], segments[1], n)
    return _integrate(_solver(segments, frames, n, scale, scaled_piece), delta, n, large_pair)


@dataclass(frozen=True)
class _Solver:
    """What the integration of a chunk's pairs works on.

    Attributes:
        grid: the ``SegmentGrid`` of the targets (group 2k: pair k's reference segments,
            2k + 1 its predicted ones), in each pair's frame.
        bounds: the targets as ``_Boundaries``.
        frames: the pairs' ``_PairFrames``.
        cell: float array, (n,): each pair's grid cell size.
        n_segs: int array, (n,): each pair's target segments.
        pieces: the integrated boundaries cut into ``_Pieces``, sorted by pair (reference
            pieces first), with their weights when there is a scale factor.
        query_group: int array, (n_pieces,): the grid group each piece is measured to (the
            other side of its pair).
        spans: int array of each span's first piece (``_spans``), or None without a scale.
    """

    grid: SegmentGrid
    bounds: _Boundaries
    frames: _PairFrames
    cell: np.ndarray
    n_segs: np.ndarray
    pieces: _Pieces
    query_group: np.ndarray
    spans: np.ndarray | None


def _solver(segments: list, frames: _PairFrames, n: int, scale, scaled_piece) -> _Solver:
    """The target grid and the sorted pieces of a chunk (``pair_distances``' arguments):
    the targets in their pairs' frames filed in a grid whose cells follow the mean segment
    length; the integrated boundaries cut into pieces of bounded length, sorted by pair.
    Empties ``segments``; the framed segments are freed as it returns."""
    xy, owner, side, bounds, cell, mean_len, n_segs, same = _target_frame(segments, frames, n)
    piece_len = np.maximum(_PIECE_FACTOR * mean_len, cell)
    if scale is not None:
        piece_len = np.minimum(piece_len, scaled_piece)
    if same:
        f_xy, f_owner, f_side = xy, owner, side
    else:
        f_xy, f_owner, f_side = _framed_segments(segments[0], segments[1], frames)[:3]
        segments.clear()
    split = split_segments(*f_xy, piece_len[f_owner])
    # Grid groups: 2k holds the reference segments of pair k, 2k + 1 the predicted ones. The
    # grid cuts the segments at its cell size: the same cut as the pieces' when the cell is
    # the piece length (as with the default factors) and the targets are the pieces'
    # segments, then not done twice.
    grid = SegmentGrid(*xy, 2 * owner + side, np.repeat(cell, 2), np.zeros((2 * n, 2)),
                       np.repeat(frames.extent, 2, axis=0),
                       split if same and np.array_equal(piece_len, cell) else None)
    pieces, parent, sub = _sorted_pieces(split, f_owner, f_side, n)
    query_group = 2 * pieces.pair + 1 - f_side[parent]
    spans = None
    if scale is not None:
        pieces.weight = 1.0 / scale(0.5 * (pieces.x0 + pieces.x1) + frames.lo_x[pieces.pair],
                                    0.5 * (pieces.y0 + pieces.y1) + frames.lo_y[pieces.pair])
        spans = _spans(pieces, parent, sub,
                       np.maximum(_PIECE_FACTOR * mean_len, cell) // scaled_piece)
    return _Solver(grid, bounds, frames, cell, n_segs, pieces, query_group, spans)


def _target_frame(segments: list, frames: _PairFrames, n: int) -> tuple:
    """The targets (``segments[2:]``) in their pairs' frames, removed from the list (with
    the integrated sides when they are the same objects: the list is then empty).

    Returns ``(xy, owner, side, bounds, cell, mean_len, n_segs, same)``: the framed targets
    (``_framed_segments``), their ``_Boundaries``, each pair's cell size (``_CELL_FACTOR``
    mean segment lengths, at least its extent / ``_MAX_CELLS_PER_SIDE``), mean target segment
    length and number of target segments, and whether the targets are the integrated sides.
    """
    (xy, owner, side, nxt, prv, seg_len), same = _framed_targets(segments, frames)
    n_segs = np.bincount(owner, minlength=n)
    mean_len = np.bincount(owner, weights=seg_len, minlength=n) / np.maximum(n_segs, 1)
    cell = np.maximum(_CELL_FACTOR * mean_len,
                      frames.size / np.maximum(_MAX_CELLS_PER_SIDE, n_segs))
    cell = np.where(cell > 0, cell, 1.0)
    bounds = _Boundaries(xy, nxt, prv, _SLACK * frames.size + 1e-300)
    return xy, owner, side, bounds, cell, mean_len, n_segs, same


def _framed_targets(segments: list, frames: _PairFrames):
    """``(_framed_segments(target_r, target_p, frames), same)``, the targets taken out of
    ``segments`` (and the integrated sides when they are the same objects): once framed, the
    segments are freed as this returns (a third of a large pair's memory)."""
    target_r, target_p = segments[2], segments[3]
    same = target_r is segments[0] and target_p is segments[1]
    del segments[0 if same else 2:]
    return _framed_segments(target_r, target_p, frames), same


def _sorted_pieces(split, owner, side, n: int):
    """The pieces ``split`` (``split_segments``' result over segments of ``owner`` and
    ``side``) sorted by pair, reference pieces first: ``(pieces, parent, sub)``, the parent
    segment and rank along it of each piece in that order."""
    px0, py0, px1, py1, parent, sub = split
    if n == 1:  # one pair: already in order (reference pieces, then predicted ones)
        return _Pieces(px0, py0, px1, py1, owner[parent]), parent, sub
    order = _by_pair(owner[parent], side[parent], n)
    parent, sub = parent[order], sub[order]
    return (_Pieces(px0[order], py0[order], px1[order], py1[order], owner[parent]),
            parent, sub)


def _integrate(solver: _Solver, delta: np.ndarray, n: int, large_pair: int):
    """The integral and Hausdorff lower bound of each of the n pairs, block by block of
    pieces.

    A block holds whole pairs, so what a pair gets does not depend on the other pairs of the
    chunk (the same bits alone or in any batch): small pairs are packed into blocks of about
    ``_PIECE_BLOCK`` pieces. A pair with more than ``large_pair`` target segments, or more
    pieces than a block, is measured alone, in blocks of its own pieces: a first one of
    ``_FIRST_PIECE_BLOCK`` (large pairs; the rows per piece are not known: many where the
    other boundary is far and finely cut), each next one holding about ``_REFINE_ROWS`` rows
    at the rows per piece of its last block."""
    integral, h_low = np.zeros(n), np.zeros(n)
    n_pieces = len(solver.pieces.pair)
    pair_start = np.searchsorted(solver.pieces.pair, np.arange(n + 1))
    pieces_of = np.diff(pair_start)
    alone = (solver.n_segs > large_pair) | (pieces_of > _PIECE_BLOCK)
    edges = None if solver.spans is None else np.append(solver.spans, n_pieces)
    block_size, k = _PIECE_BLOCK, 0
    while k < n:
        if pieces_of[k] == 0:
            k += 1
            continue
        if alone[k]:
            start, stop = int(pair_start[k]), int(pair_start[k + 1])
            size = _FIRST_PIECE_BLOCK if solver.n_segs[k] > large_pair else _PIECE_BLOCK
            while start < stop:
                end = min(start + size, stop)
                if edges is not None and end < stop:  # whole spans
                    end = int(max(edges[np.searchsorted(edges, end)],
                                  edges[np.searchsorted(edges, start, "right")]))
                per_piece = _integrate_block(solver, start, end, delta, n, integral, h_low)
                size = _next_block(per_piece)
                start = end
            k += 1
            continue
        # Whole small pairs up to the block size (one at least).
        last = k + 1
        limit = pair_start[k] + block_size
        while last < n and not alone[last] and pair_start[last + 1] <= limit:
            last += 1
        per_piece = _integrate_block(solver, int(pair_start[k]), int(pair_start[last]), delta,
                                     n, integral, h_low)
        block_size = _next_block(per_piece)
        k = last
    return integral, h_low


def _next_block(per_piece: float) -> int:
    """Pieces of the next block, from the candidate rows per piece of the last one."""
    return int(min(max(_REFINE_ROWS / per_piece, _MIN_PIECE_BLOCK), _PIECE_BLOCK))


def _integrate_block(solver: _Solver, start: int, end: int, delta, n: int, integral, h_low):
    """Search and integrate the pieces ``start:end``, adding to ``integral`` and raising
    ``h_low`` (float arrays, shape (n,)) in place. Returns the block's candidate rows per
    piece (at least 1)."""
    block = np.arange(start, end)
    part = solver.pieces[block]
    rows, kept = _block_candidates(solver, part, block)
    for piece_range, row_range in _row_blocks(rows.piece, part.pair[kept], _REFINE_ROWS):
        integral += _refine_rows(solver.bounds, part[kept[piece_range]], rows, piece_range,
                                 row_range, delta, n, h_low)
    return max(len(rows.seg) / (end - start), 1.0)


def _block_candidates(solver: _Solver, part: _Pieces, block: np.ndarray):
    """``_piece_candidates`` of the pieces ``part`` (positions ``block``, consecutive), by
    spans with a scale factor (``_span_candidates``)."""
    length = hypot(part.x1 - part.x0, part.y1 - part.y0)
    search = (solver.grid, solver.bounds, solver.frames.diag, solver.cell)
    query_group = solver.query_group[block]
    if solver.spans is None:
        return _piece_candidates(search, part, length, query_group)
    start, end, spans = block[0], block[-1] + 1, solver.spans
    block_spans = spans[np.searchsorted(spans, start):np.searchsorted(spans, end)]
    return _span_candidates(search, part, length, query_group, block_spans - start)


def _refine_rows(bounds: _Boundaries, part: _Pieces, rows: _Rows, piece_range, row_range,
                 delta, n: int, h_low):
    """``_refine`` of the rows ``row_range`` of a block (those of its pieces
    ``piece_range``), renumbered from the first of those pieces."""
    if len(row_range) < len(rows.seg):
        rows = rows[row_range]
        rows.piece = rows.piece - piece_range.start
    return _refine(bounds, part, rows, delta, n, h_low)


def _piece_candidates(search, pieces: _Pieces, length, query_group):
    """``_initial_candidates`` of pieces, first searched within half their length and
    ``_FIRST_MARGIN`` cells around them. ``search``: (grid, bounds, diag, cell)."""
    grid, bounds, diag, cell = search
    first_radius = np.minimum(0.5 * length + _FIRST_MARGIN * cell[pieces.pair],
                              diag[pieces.pair])
    return _initial_candidates(grid, bounds, pieces, length, query_group, first_radius, diag)


def _spans(pieces: _Pieces, segment, rank, per_span) -> np.ndarray:
    """First piece of each span: runs of at most ``per_span[pair]`` (>= 1) consecutive
    pieces of one segment (``segment``, ``rank``: the segment of each piece and its rank
    along it, from ``split_segments``). Returns int64 positions, increasing, from 0."""
    per = np.maximum(per_span, 1).astype(np.int64)[pieces.pair]
    return np.flatnonzero(run_starts(segment) | run_starts(rank // per))


def _span_candidates(search, pieces: _Pieces, length, query_group, spans):
    """``_piece_candidates`` of short pieces (those of a scale factor, ``_scaled_piece``),
    the same rows in a fraction of the time: each span of pieces (``spans``: first piece of
    each, a run along one segment, ``_spans``) is searched as one piece, and each of its
    pieces takes the span's rows that a search of the piece itself would keep.

    Why the same rows: the span's rows hold every segment within U of the span (U its
    bound, at least the distance anywhere on it); a piece's bound U' and the least of its
    rows' largest end distances W' are found among them (the nearest segments to its ends
    are within U), and when W' <= U, every row the piece's own search keeps (within U' <= W'
    of the piece, or at W') is within U of the span, so among them. A piece with W' > U
    (rare) is searched itself. (A piece's own search can keep a few rows more, when its last
    radius missed the segment that sets W'; any rows that hold the nearest segments give the
    same distances.) Rows of a piece keep the span's order (not always the order of the
    piece's own search: sums may differ in the last bit). The span's rows are handed to its
    pieces in batches of at most ``_ROW_BUDGET`` (piece, row) pairs.
    """
    m = len(pieces.pair)
    ends = np.append(spans[1:], m)
    span = _Pieces(pieces.x0[spans], pieces.y0[spans], pieces.x1[ends - 1],
                   pieces.y1[ends - 1], pieces.pair[spans])
    span_len = hypot(span.x1 - span.x0, span.y1 - span.y0)
    s_rows, s_kept = _piece_candidates(search, span, span_len, query_group[spans])
    found, unsafe = [], []
    if len(s_kept):
        starts = group_starts(s_rows.piece)
        n_rows = np.diff(np.append(starts, len(s_rows.piece)))
        # The span's bound U, from its rows (they hold the minimisers).
        s_bound = np.minimum(
            np.minimum.reduceat(np.maximum(s_rows.d0, s_rows.d1), starts),
            0.5 * (np.minimum.reduceat(s_rows.d0, starts) + np.minimum.reduceat(s_rows.d1, starts)
                   + span_len[s_kept]))
        per_span = (ends - spans)[s_kept]
        for a, b in budget_splits(per_span * n_rows, _ROW_BUDGET):
            rows, not_sure = _rows_of_span_pieces(
                search[1], pieces, length, spans[s_kept[a:b]], per_span[a:b],
                s_rows.seg, starts[a:b], n_rows[a:b], s_bound[a:b])
            found.append(rows)
            unsafe.append(not_sure)
    rows = _concatenate_rows(found)
    unsafe = np.concatenate(unsafe) if unsafe else np.zeros(0, np.int64)
    if len(unsafe):
        own, kept = _piece_candidates(search, pieces[unsafe], length[unsafe],
                                      query_group[unsafe])
        own.piece = unsafe[kept][own.piece]
        both = _concatenate_rows([rows, own])
        rows = both[np.argsort(both.piece, kind="stable")]  # grouped by piece again
    return _renumbered(rows, m)


def _rows_of_span_pieces(bounds: _Boundaries, pieces: _Pieces, length, first, count,
                         span_seg, span_start, span_rows, span_bound):
    """The rows of the pieces of some spans (``first`` piece and ``count`` of pieces of each)
    from the spans' rows (segments ``span_seg[span_start:span_start + span_rows]``, bound
    ``span_bound``), kept as ``_search`` keeps them. Returns (rows of the pieces where that
    is sure, grouped by piece; positions of the pieces where it is not)."""
    piece = ranges(first, count)
    of_span = group_ids(count)
    rows_per_piece = span_rows[of_span]
    entry = group_ids(rows_per_piece)  # position in ``piece``
    row = ranges(span_start[of_span], rows_per_piece)  # position in ``span_seg``
    # A row can be kept by a piece only within the span's bound of it (see the docstring):
    # pieces farther along the span than that, by their projection, are not looked at.
    reach = _span_reach(bounds, pieces, first, count, span_seg, span_start, span_rows,
                        span_bound)
    rank = piece - first[of_span]
    del of_span, rows_per_piece
    local = row - span_start[0]
    at = rank[entry]
    near = at >= reach[0][local]
    near &= at <= reach[1][local]
    near = np.flatnonzero(near)
    entry, seg = entry[near], span_seg[row[near]]
    del row, local, at, near, reach, rank
    n_entries = np.bincount(entry, minlength=len(piece))
    if not n_entries.all():  # not expected (the nearest segments are near): searched
        unsure = n_entries == 0
        take = np.flatnonzero(~unsure[entry])
        entry, seg = (np.cumsum(~unsure) - 1)[entry[take]], seg[take]
        rows, unsafe = _rows_of_span_pieces_near(bounds, pieces, length, piece[~unsure],
                                                 entry, seg, span_bound[group_ids(count)][~unsure])
        return rows, np.sort(np.concatenate([unsafe, piece[unsure]]))
    return _rows_of_span_pieces_near(bounds, pieces, length, piece, entry, seg,
                                     span_bound[group_ids(count)])


def _span_reach(bounds: _Boundaries, pieces: _Pieces, first, count, span_seg, span_start,
                span_rows, span_bound):
    """For each row of the spans, the ranks (along its span) of the first and last piece
    it can be within ``span_bound`` (+ twice the slack) of: from the projections of its
    segment's ends on the span's line, widened by one piece each way for rounding.
    Returns two int64 arrays, shape (sum of span_rows,)."""
    last = first + count - 1
    x0, y0 = pieces.x0[first], pieces.y0[first]
    dx, dy = pieces.x1[last] - x0, pieces.y1[last] - y0
    span_len = hypot(dx, dy)
    ux, uy = dx / span_len, dy / span_len
    step = span_len / count  # the pieces of a segment are equally long
    of_row = group_ids(span_rows)
    ax, ay, bx, by = bounds.rows_xy(span_seg[ranges(span_start, span_rows)])
    ox, oy, ux, uy = x0[of_row], y0[of_row], ux[of_row], uy[of_row]
    ta = (ax - ox) * ux + (ay - oy) * uy
    tb = (bx - ox) * ux + (by - oy) * uy
    margin = (span_bound + 2.0 * bounds.slack[pieces.pair[first]])[of_row]
    h = step[of_row]
    with np.errstate(invalid="ignore"):
        lo = np.floor((np.minimum(ta, tb) - margin) / h) - 1
        hi = np.floor((np.maximum(ta, tb) + margin) / h) + 1
    # Not finite (not expected): every piece of the span.
    lo = np.where(np.isfinite(lo), np.maximum(lo, 0), 0).astype(np.int64)
    hi = np.where(np.isfinite(hi), np.minimum(hi, count[of_row] - 1),
                  count[of_row] - 1).astype(np.int64)
    return lo, hi


def _rows_of_span_pieces_near(bounds: _Boundaries, pieces: _Pieces, length, piece, entry,
                              seg, span_bound):
    """``_rows_of_span_pieces`` once the rows near each piece are known: ``entry``
    (position in ``piece``, grouped, every piece present) and ``seg`` of each."""
    px0, py0 = pieces.x0[piece][entry], pieces.y0[piece][entry]
    px1, py1 = pieces.x1[piece][entry], pieces.y1[piece][entry]
    ax, ay, bx, by = bounds.rows_xy(seg)
    d0, d1 = _end_distances(px0, py0, px1, py1, ax, ay, bx, by)
    worst = np.maximum(d0, d1)
    at = group_starts(entry)
    best_worst = np.minimum.reduceat(worst, at)
    bound = np.minimum(best_worst, 0.5 * (np.minimum.reduceat(d0, at)
                                          + np.minimum.reduceat(d1, at) + length[piece]))
    safe = best_worst <= span_bound
    # As in ``_search``: first by box (an empty box for the pieces not sure), then exactly.
    grow = bound + bounds.slack[pieces.pair[piece]]
    limit = grow[entry]
    box = bounds.rows_box(seg)
    x0, y0, x1, y1 = pieces.x0[piece], pieces.y0[piece], pieces.x1[piece], pieces.y1[piece]
    near = box[0] <= np.where(safe, np.maximum(x0, x1) + grow, -np.inf)[entry]
    near &= box[2] >= (np.minimum(x0, x1) - grow)[entry]
    near &= box[1] <= (np.maximum(y0, y1) + grow)[entry]
    near &= box[3] >= (np.minimum(y0, y1) - grow)[entry]
    del box, x0, y0, x1, y1
    dmin = _distance_to_piece(px0, py0, px1, py1, ax, ay, bx, by, d0, d1,
                              np.where(near, limit, np.inf))
    k = np.flatnonzero(near & ((dmin <= limit) | (worst == best_worst[entry])))
    return _Rows(piece[entry[k]], seg[k], d0[k], d1[k], dmin[k]), piece[~safe]


def _concatenate_rows(parts: list) -> _Rows:
    """The rows of several parts, one after the other (no parts: no rows)."""
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return _Rows(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0),
                     np.zeros(0))
    return _Rows(*(np.concatenate([getattr(p, f) for p in parts])
                   for f in ("piece", "seg", "d0", "d1", "dmin")))


def _renumbered(rows, m):
    """Rows of pieces 0..m-1 (grouped by piece) with their pieces renumbered among
    those that have rows, and those pieces' positions."""
    if len(rows.piece) == 0:
        return rows, np.zeros(0, np.int64)
    counts = np.bincount(rows.piece, minlength=m)
    kept = np.flatnonzero(counts)
    rows.piece = group_ids(counts[kept])
    return rows, kept


def _row_blocks(row_piece: np.ndarray, piece_pair: np.ndarray, budget: int):
    """(piece range, row range) slices cutting rows grouped by piece (``row_piece``: piece of
    each row, 0..m-1, sorted; ``piece_pair``: pair of each piece, sorted) into blocks of at
    most ``budget`` rows, made of whole pairs; a pair with more rows is cut into blocks of
    its own pieces, from its first piece (one piece at least), so that its blocks, and its
    numbers, do not depend on the other pairs."""
    if len(row_piece) <= budget:
        m = int(row_piece[-1]) + 1 if len(row_piece) else 0
        return [(slice(0, m), np.arange(len(row_piece)))]
    first_row = np.flatnonzero(run_starts(row_piece))  # first row of each piece
    per_piece = np.diff(np.append(first_row, len(row_piece)))
    pair_first = np.flatnonzero(run_starts(piece_pair))  # first piece of each pair
    pair_rows = np.add.reduceat(per_piece, pair_first)
    cuts = []
    for a, b in budget_splits(pair_rows, budget):
        p0 = int(pair_first[a])
        p1 = int(pair_first[b]) if b < len(pair_first) else len(per_piece)
        if b - a == 1 and pair_rows[a] > budget:
            cuts += [(p0 + c, p0 + d) for c, d in budget_splits(per_piece[p0:p1], budget)]
        else:
            cuts.append((p0, p1))
    out = []
    for a, b in cuts:
        r0 = first_row[a]
        r1 = first_row[b] if b < len(first_row) else len(row_piece)
        out.append((slice(a, b), np.arange(r0, r1)))
    return out


def _by_pair(owner: np.ndarray, side: np.ndarray, n: int) -> np.ndarray:
    """The order that takes rows sorted by (side 0/1, owner) to rows sorted by owner, side
    (keeping the order within each), without sorting."""
    counts = np.bincount(owner + n * side, minlength=2 * n).reshape(2, n)
    per_pair = counts[0] + counts[1]
    pair_start = np.cumsum(per_pair) - per_pair
    # Position of each row within its (side, owner) run.
    run_start = (np.cumsum(counts.ravel()) - counts.ravel())[owner + n * side]
    dest = pair_start[owner] + side * counts[0][owner] + np.arange(len(owner)) - run_start
    order = np.empty(len(owner), dtype=np.int64)
    order[dest] = np.arange(len(owner))
    return order


def _drop_short(short, xy, owner, side, nxt, prv, seg_len):
    """Remove the segments marked ``short``; the links of the others skip over them (a chain
    of short segments ends within its ring, so at most the ring's length of hops)."""
    keep = ~short
    new_index = np.cumsum(keep) - 1
    at = np.flatnonzero(keep)

    def relink(full):
        links = full[at]
        while True:
            hop = np.flatnonzero((links >= 0) & short[np.maximum(links, 0)])
            if len(hop) == 0:
                return np.where(links >= 0, new_index[np.maximum(links, 0)], -1)
            links[hop] = full[links[hop]]  # follow the short segment's own link

    new_next, new_prev = relink(nxt), relink(prv)
    return xy[:, at], owner[at], side[at], new_next, new_prev, seg_len[at]


def _least(values, owner, n):
    out = np.zeros(n)
    if len(owner):
        starts = group_starts(owner)
        out[owner[starts]] = np.minimum.reduceat(values, starts)
    return out


def _most(values, owner, n):
    out = np.zeros(n)
    if len(owner):
        starts = group_starts(owner)
        out[owner[starts]] = np.maximum.reduceat(values, starts)
    return out


def _initial_candidates(grid, bounds: _Boundaries, pieces: _Pieces, length, query_group,
                        radius, diag):
    """For each piece, the segments of the other boundary that can be nearest to some point of
    it: those within U of the piece, U an upper bound of the distance on the piece.

    Searched in rounds: within ``radius`` of the piece first (float array, shape (m,)); a
    piece whose bound U exceeds the radius searched is searched again within U (4 times
    farther when nothing was found). The rows kept do not depend on the radii searched.
    Pieces are searched in batches, which bounds the memory of a search.

    Returns (rows grouped by piece, pieces renumbered 0..m-1; the int64 positions of the
    pieces kept: all, unless the other boundary of a pair is empty).
    """
    m = len(pieces.pair)
    radius = radius.copy()
    pending = np.arange(m, dtype=np.int64)
    found: list[_Rows] = []  # each piece's rows come from one round, grouped by piece
    while len(pending):
        again = []
        for pp, scan in _search_batches(grid, pieces, query_group, radius, pending):
            rows, retry = _search(grid, bounds, pieces, length, query_group, radius, diag, pp,
                                  scan)
            if rows is not None:
                found.append(rows)
            again.append(retry)
        pending = np.concatenate(again)
    counts = np.zeros(m, dtype=np.int64)
    for part in found:
        counts += np.bincount(part.piece, minlength=m)
    kept = np.flatnonzero(counts)
    if len(found) == 1:
        rows = found[0]
    else:
        # Put each batch's rows at their place (a piece's rows come from one batch), without
        # sorting, freeing the batches as they go.
        place = np.cumsum(counts) - counts
        total = int(counts.sum())
        rows = _Rows(None, np.empty(total, np.int64), np.empty(total), np.empty(total),
                     np.empty(total))
        found.reverse()
        while found:
            part = found.pop()
            runs = group_starts(part.piece)
            at = ranges(place[part.piece[runs]], np.diff(np.append(runs, len(part.piece))))
            rows.seg[at], rows.d0[at], rows.d1[at], rows.dmin[at] = (
                part.seg, part.d0, part.d1, part.dmin)
    rows.piece = group_ids(counts[kept])
    return rows, kept


def _search_batches(grid, pieces: _Pieces, query_group, radius, pending):
    """The pieces ``pending`` (increasing positions) in consecutive batches whose search
    scans at most ``_ROW_BUDGET`` rows of cells and gathers at most ``_ROW_BUDGET`` rows (a
    batch holds one piece at least): counted before anything is gathered. Yields (batch,
    its grid scan for ``SegmentGrid.query`` or None)."""
    for start in range(0, len(pending), _SEARCH_BATCH):
        pp = pending[start:start + _SEARCH_BATCH]
        r = radius[pp]
        x0, x1, y0, y1 = pieces.x0[pp], pieces.x1[pp], pieces.y0[pp], pieces.y1[pp]
        bx0, bx1 = np.minimum(x0, x1) - r, np.maximum(x0, x1) + r
        by0, by1 = np.minimum(y0, y1) - r, np.maximum(y0, y1) + r
        group = query_group[pp]
        for a, b in budget_splits(grid.scan_rows(by0, by1, group), _ROW_BUDGET):
            found, scan = grid.count(bx0[a:b], by0[a:b], bx1[a:b], by1[a:b], group[a:b],
                                     keep_scan=True)
            if b - a == len(pp) and found.sum() <= _ROW_BUDGET:
                yield pp, scan  # the boxes _search makes of them: the same scan
                continue
            del scan
            for c, d in budget_splits(found, _ROW_BUDGET):
                yield pp[a + c:a + d], None


def _search(grid, bounds: _Boundaries, pieces: _Pieces, length, query_group, radius, diag, pp,
            scan=None):
    """One round of ``_initial_candidates`` for the pieces ``pp`` (increasing positions);
    ``scan``: None or their boxes' grid scan (``_search_batches``).

    Returns (the rows of the pieces finished in this round, grouped by piece, or None; the
    pieces to search again). ``radius`` of the pieces to search again is updated in place.
    """
    # Consecutive pieces (the whole first round) are taken as views, without copies.
    at = slice(pp[0], pp[-1] + 1) if pp[-1] - pp[0] + 1 == len(pp) else pp
    sub = _Pieces(pieces.x0[at], pieces.y0[at], pieces.x1[at], pieces.y1[at], pieces.pair[at])
    r = radius[at]
    lox, hix = np.minimum(sub.x0, sub.x1), np.maximum(sub.x0, sub.x1)
    loy, hiy = np.minimum(sub.y0, sub.y1), np.maximum(sub.y0, sub.y1)
    bx0, bx1, by0, by1 = lox - r, hix + r, loy - r, hiy + r
    qi, seg = grid.query(bx0, by0, bx1, by1, query_group[at], scan)
    box = bounds.rows_box(seg)
    near = box[0] <= bx1[qi]  # the four tests, combined in place
    near &= box[2] >= bx0[qi]
    near &= box[1] <= by1[qi]
    near &= box[3] >= by0[qi]
    near = np.flatnonzero(near)
    del bx0, bx1, by0, by1
    qi, seg, box = qi[near], seg[near], np.take(box, near, axis=1)
    del near
    ax, ay, bx, by = bounds.rows_xy(seg)
    px0, py0, px1, py1 = sub.x0[qi], sub.y0[qi], sub.x1[qi], sub.y1[qi]
    d0, d1 = _end_distances(px0, py0, px1, py1, ax, ay, bx, by)
    worst = np.maximum(d0, d1)
    has = np.zeros(len(pp), dtype=bool)
    best_worst = np.full(len(pp), np.inf)
    bound = np.full(len(pp), np.inf)
    if len(qi):
        starts = group_starts(qi)
        ids = qi[starts]
        has[ids] = True
        best_worst[ids] = np.minimum.reduceat(worst, starts)
        f0 = np.minimum.reduceat(d0, starts)
        f1 = np.minimum.reduceat(d1, starts)
        bound[ids] = np.minimum(best_worst[ids], 0.5 * (f0 + f1 + length[at][ids]))
    slack = bounds.slack[sub.pair]
    everything = r >= diag[sub.pair]
    done = has & ((bound + slack <= r) | everything)
    rows = None
    if done.any():
        # Keep the rows of finished pieces within U: first by box (the box of each piece
        # grown by U, empty for pieces not finished), then exactly.
        grow = bound + slack
        limit = grow[qi]
        near = (
            (box[0] <= np.where(done, hix + grow, -np.inf)[qi]) & (box[2] >= (lox - grow)[qi])
            & (box[1] <= (hiy + grow)[qi]) & (box[3] >= (loy - grow)[qi])
        )
        # Rows not near are dropped whatever their distance: an infinite limit skips them.
        dmin = _distance_to_piece(px0, py0, px1, py1, ax, ay, bx, by, d0, d1,
                                  np.where(near, limit, np.inf))
        k = np.flatnonzero(near & ((dmin <= limit) | (worst == best_worst[qi])))
        rows = _Rows(pp[qi[k]], seg[k], d0[k], d1[k], dmin[k])
    retry = np.flatnonzero(~done & ~(everything & ~has))  # a pair without other boundary: no
    grown = np.where(has, bound + 2 * slack, 4 * r)[retry]
    radius[pp[retry]] = np.minimum(grown, diag[sub.pair[retry]] * (1 + 1e-9) + slack[retry])
    return rows, pp[retry]


def _refine(bounds: _Boundaries, pieces: _Pieces, rows: _Rows, delta, n, h_low):
    """Integrate and maximise the distance over every piece, halving pieces where needed.

    On a piece the distance to the other boundary is min_t f_t over its candidate segments t
    (f_t the distance to t, convex and 1-Lipschitz). With one function left, the integral has
    a closed form and the maximum is at an end. With a few, the piece is cut where they cross
    and each part done the same way. With more, the integral and maximum are bracketed and the
    piece is halved until the brackets meet the error bounds (at the latest when the piece is
    no longer than Δ).

    Pieces stay sorted by pair and rows grouped by piece (children replace their parent in
    place), so per-pair and per-piece reductions are ``reduceat`` calls.
    ``h_low`` (float array, shape (n,)): the largest lower bound of each pair's Hausdorff
    distance found so far, raised in place by the maxima found here. Returns the integral
    per pair.
    """
    n_seg = bounds.n
    integral = np.zeros(n)
    while len(pieces.pair):
        length = hypot(pieces.x1 - pieces.x0, pieces.y1 - pieces.y0)
        # The integral of each piece finished in this round (0 for those halved), summed per
        # pair in the order of the pieces once the round is done: each pair's sum then does
        # not depend on how the pieces were grouped (by kind, by width, in batches).
        value = np.zeros(len(length))
        # The rows' frames, in blocks of pieces (their temporaries then stay in the cache):
        # the pieces with one function are integrated there, the others gathered by kind.
        blocks = []
        for p0, p1, r0, r1 in _refine_blocks(rows.piece, len(pieces.pair)):
            block_pieces = _Pieces(pieces.x0[p0:p1], pieces.y0[p0:p1], pieces.x1[p0:p1],
                                   pieces.y1[p0:p1], pieces.pair[p0:p1])
            block_rows = _Rows(rows.piece[r0:r1] - p0, rows.seg[r0:r1], rows.d0[r0:r1],
                               rows.d1[r0:r1], rows.dmin[r0:r1])
            blocks.append(_classify(bounds, block_pieces, length[p0:p1], block_rows, n_seg,
                                    p0))
            del block_pieces, block_rows
        del rows

        # One function: exact integral; the maximum is at an end (convexity).
        sp, piece_integral, piece_max = _joined([b[0] for b in blocks])
        _add(value, h_low, sp, pieces.pair[sp], piece_integral, piece_max,
             None if pieces.weight is None else pieces.weight[sp])
        del sp, piece_integral, piece_max

        # A few functions: cut where they cross, then as above. Pieces with the same number of
        # rows go together, as (rows, pieces) arrays; few pieces (after halving) go at once,
        # padded to the widest by repeating a piece's last row (an equal function changes
        # nothing), which saves calls.
        by_width = [_joined([b[1][w] for b in blocks], axis=-1)
                    for w in range(2, _EXACT_MAX_ROWS + 1)]
        n_multi = sum(len(group[0]) for group in by_width)
        if n_multi <= _FEW_PIECES:
            by_width = [_padded(by_width)] if n_multi else []
        for multi, multi_frame, multi_fid in by_width:
            # In batches: the envelope's many temporaries then stay in the cache.
            for start in range(0, len(multi), _ENVELOPE_BATCH):
                few = multi[start:start + _ENVELOPE_BATCH]
                end = start + len(few)
                few_integral, few_max = _envelope(length[few], multi_frame[:, :, start:end],
                                                  multi_fid[:, start:end])
                _add(value, h_low, few, pieces.pair[few], few_integral, few_max,
                     None if pieces.weight is None else pieces.weight[few])
        del by_width

        # More: bracket, finish the pieces whose brackets meet the bounds, halve the others.
        many = [b[2] for b in blocks if b[2] is not None]
        del blocks
        if not many:
            integral += np.bincount(pieces.pair, weights=value, minlength=n)
            break
        many, many_rows, many_frame = _joined_rows(many)
        pair = pieces.pair[many]
        lo, hi, max_lo, max_hi, d_mid = _piece_bounds(length[many], many_rows, many_frame)
        many_length = length[many]
        if pieces.weight is not None:  # in metres
            w = pieces.weight[many]
            lo, hi, many_length = lo * (w * w), hi * (w * w), many_length * w
            max_lo, max_hi = max_lo * w, max_hi * w
        _raise_max(h_low, pair, max_lo)
        dl = delta[pair]
        done = (many_length <= dl) | (
            (hi - lo <= 0.5 * many_length * dl)
            & (max_hi <= np.maximum(max_lo, h_low[pair]) + 0.5 * dl)
        )
        value[many[done]] = 0.5 * (lo + hi)[done]
        integral += np.bincount(pieces.pair, weights=value, minlength=n)
        if done.all():
            break
        row_split = np.flatnonzero(~done[many_rows.piece])
        parent_rows = many_rows[row_split]
        parent_rows.piece = (np.cumsum(~done) - 1)[parent_rows.piece]
        pieces, rows = _halve(bounds, pieces[many[~done]], parent_rows, d_mid[row_split])
    return integral


def _refine_blocks(row_piece, m):
    """(p0, p1, r0, r1): consecutive blocks of at most ``_REFINE_BLOCK`` pieces [p0, p1)
    and their rows [r0, r1) (``row_piece``: piece of each row, sorted)."""
    if m <= _REFINE_BLOCK:
        return [(0, m, 0, len(row_piece))]
    cuts = np.arange(0, m + _REFINE_BLOCK, _REFINE_BLOCK)
    cuts[-1] = m
    at = np.searchsorted(row_piece, cuts)
    return [(int(cuts[k]), int(cuts[k + 1]), int(at[k]), int(at[k + 1]))
            for k in range(len(cuts) - 1)]


def _classify(bounds: _Boundaries, pieces: _Pieces, length, rows: _Rows, n_seg, offset):
    """The first step of ``_refine`` on a block of pieces: the rows' frames and function ids
    (``_drop_dominated``), the pieces with one function integrated, the others gathered.

    Returns ``(single, multi, many)``, piece positions plus ``offset``:
    ``single`` = (positions of the pieces with one function, their integral, their maximum);
    ``multi[w]`` for w in 2.._EXACT_MAX_ROWS = (positions of the pieces with w rows and more
    than one function, their rows' frames (5, w, k), function ids (w, k));
    ``many`` = None or (positions of the pieces with more rows, their rows (``_Rows``,
    pieces numbered 0.. among them), the rows' frames (5, rows)).
    """
    frame = _row_frames(bounds, pieces, length, rows)
    rows, frame, fid = _drop_dominated(bounds, pieces, length, rows, frame, n_seg)
    pr = rows.piece
    new_piece = run_starts(pr)
    starts = np.flatnonzero(new_piece)
    ends = np.append(starts[1:], len(pr))
    n_rows = ends - starts
    # A piece has a single function when its ids do not change along its rows.
    changes = run_starts(fid)
    changes &= ~new_piece
    single = np.ones(len(starts), dtype=bool)
    single[pr[np.flatnonzero(changes)]] = False
    del new_piece, changes, ends
    sp = np.flatnonzero(single)
    first = starts[sp]
    piece_integral = frame_integral(*np.take(frame, first, axis=1), length[sp])
    piece_max = np.maximum(rows.d0[first], rows.d1[first])
    del first
    width = np.where(single, 0, n_rows)
    multi = [None, None]  # by width, from 2
    for w in range(2, _EXACT_MAX_ROWS + 1):
        few = np.flatnonzero(width == w)
        at = starts[few] + np.arange(w)[:, None]
        multi.append((few + offset, np.take(frame, at, axis=1), fid[at]))
    many = None
    if n_rows.max(initial=0) > _EXACT_MAX_ROWS:
        more = width > _EXACT_MAX_ROWS
        in_many = np.flatnonzero(more[pr])
        many_rows = rows[in_many]
        many_rows.piece = (np.cumsum(more) - 1)[many_rows.piece]
        many = (np.flatnonzero(more) + offset, many_rows, np.take(frame, in_many, axis=1))
    return (sp + offset, piece_integral, piece_max), multi, many


def _joined(parts, axis=0):
    """The tuples of arrays ``parts`` joined element by element (along ``axis``; the first
    array of each tuple along its only axis)."""
    if len(parts) == 1:
        return parts[0]
    return tuple(np.concatenate(c, axis=0 if k == 0 else axis) for k, c in enumerate(zip(*parts)))


def _padded(by_width):
    """The groups (positions, frames (5, w, k), ids (w, k)) of ``by_width`` as one group in
    the order of the positions, each padded to the widest by repeating its last row."""
    groups = [g for g in by_width if len(g[0])]
    width = max(g[1].shape[1] for g in groups)
    pad = [np.minimum(np.arange(width), g[1].shape[1] - 1) for g in groups]
    positions = np.concatenate([g[0] for g in groups])
    order = np.argsort(positions)
    frame = np.concatenate([g[1][:, p] for g, p in zip(groups, pad)], axis=-1)
    fid = np.concatenate([g[2][p] for g, p in zip(groups, pad)], axis=-1)
    return positions[order], np.take(frame, order, axis=-1), np.take(fid, order, axis=-1)


def _joined_rows(many):
    """The ``many`` parts of ``_classify`` joined: positions, rows (pieces renumbered), frames."""
    if len(many) == 1:
        return many[0]
    positions = np.concatenate([m[0] for m in many])
    rows = _concatenate_rows([m[1] for m in many])
    rows.piece = group_ids(np.concatenate([np.bincount(m[1].piece, minlength=len(m[0]))
                                           for m in many]))
    return positions, rows, np.concatenate([m[2] for m in many], axis=1)


def _row_frames(bounds: _Boundaries, pieces: _Pieces, length, rows: _Rows) -> np.ndarray:
    """The frame (``axis_frame``) of each row's segment seen from its piece, as one (5, rows)
    array: one np.take gathers all four terms of the pieces, one all five of the segments."""
    start = np.stack([pieces.x0, pieces.y0, (pieces.x1 - pieces.x0) / length,
                      (pieces.y1 - pieces.y0) / length])
    return axis_frame(*np.take(start, rows.piece, axis=1), *np.take(bounds.axes, rows.seg, axis=1))


def _end_distances(px0, py0, px1, py1, ax, ay, bx, by):
    """Distances from the ends (px0, py0) and (px1, py1) of pieces to segments [a, b] (a != b):
    ``point_segment_distance`` twice, sharing the segment's terms."""
    wx, wy = bx - ax, by - ay
    ww = wx * wx
    ww += wy * wy
    out = []
    for x, y in ((px0, py0), (px1, py1)):
        # hypot(dx - t wx, dy - t wy), t = clip((dx wx + dy wy) / ww, 0, 1), in place.
        dx, dy = x - ax, y - ay
        t = dx * wx
        tmp = dy * wy
        t += tmp
        t /= ww
        np.maximum(t, 0.0, out=t)
        np.minimum(t, 1.0, out=t)
        dx -= np.multiply(t, wx, out=tmp)
        dy -= np.multiply(t, wy, out=tmp)
        dx *= dx
        dy *= dy
        dx += dy
        out.append(np.sqrt(dx, out=dx))
    return out


def _distance_to_piece(px0, py0, px1, py1, ax, ay, bx, by, d0, d1, limit):
    """A lower bound of the distance between each piece and segment, exact where it matters:
    the segment distance where an end of the piece is farther than ``limit``, else 0 (the row
    is kept either way)."""
    out = np.zeros(len(d0))
    far = np.flatnonzero(np.minimum(d0, d1) > limit)
    if len(far):
        out[far] = segment_distance(px0[far], py0[far], px1[far], py1[far], ax[far], ay[far],
                                    bx[far], by[far], d0[far], d1[far])
    return out


def _add(value, h_low, at, pair, piece_integral, piece_max, weight=None):
    """The integrals of the pieces ``at`` into ``value`` (per piece), their maxima into
    ``h_low`` (per pair; ``pair`` of each piece, sorted)."""
    if weight is not None:  # CRS units to metres: distance times length, distance
        piece_integral = piece_integral * (weight * weight)
        piece_max = piece_max * weight
    value[at] = piece_integral
    _raise_max(h_low, pair, piece_max)


def _raise_max(h: np.ndarray, pair: np.ndarray, values: np.ndarray) -> None:
    """h[k] = max(h[k], values of pair k), for ``pair`` sorted."""
    if len(pair) == 0:
        return
    starts = group_starts(pair)
    ids = pair[starts]
    h[ids] = np.maximum(h[ids], np.maximum.reduceat(values, starts))


def _drop_dominated(bounds: _Boundaries, pieces: _Pieces, length, rows: _Rows, frame, n_seg):
    """Function ids of the rows, without rows whose function another row undercuts.

    A segment whose nearest point is its end vertex v for both ends of the piece is nearest at
    v on the whole piece (the points nearest to v form a half-plane), so its distance is the
    distance to v: function id v (the vertex at the start of segment t is t, at the open end
    of a curve 2 n_seg + t); other rows have id n_seg + t. If the other segment at v is not
    also held at v there, it is nearer everywhere on the piece, and within the same bound of
    it, so it is a row too: the row of v goes. (Dropping along such links strictly decreases
    the distance, so the nearest row always stays.)
    """
    tau0, alpha, _, _, seg_len = frame
    tau1 = tau0 + alpha * length[rows.piece]
    at_a = (tau0 <= 0) & (tau1 <= 0)
    at_b = (tau0 >= seg_len) & (tau1 >= seg_len)
    seg = rows.seg
    fid = seg + n_seg
    vertex = np.flatnonzero(at_a | at_b)
    if len(vertex) == 0:
        return rows, frame, fid
    va = at_a[vertex]
    vseg = seg[vertex]
    nxt = bounds.next[vseg]
    fid[vertex] = np.where(va, vseg, np.where(nxt >= 0, nxt, 2 * n_seg + vseg))
    nb = np.where(va, bounds.prev[vseg], nxt)
    lone = nb < 0  # the open end of a curve: no other segment there
    nb = np.maximum(nb, 0)
    pr = rows.piece[vertex]
    nx0, ny0, nx1, ny1 = bounds.rows_xy(nb)
    wx, wy = nx1 - nx0, ny1 - ny0
    ww = wx * wx + wy * wy
    s0 = ((pieces.x0[pr] - nx0) * wx + (pieces.y0[pr] - ny0) * wy) / ww
    s1 = ((pieces.x1[pr] - nx0) * wx + (pieces.y1[pr] - ny0) * wy) / ww
    held = lone | np.where(va, (s0 >= 1) & (s1 >= 1), (s0 <= 0) & (s1 <= 0))
    if held.all():
        return rows, frame, fid
    keep = np.ones(len(fid), dtype=bool)
    keep[vertex[~held]] = False
    keep = np.flatnonzero(keep)
    return rows[keep], np.take(frame, keep, axis=1), fid[keep]


def _envelope(length, frame, fid):
    """Exact integral and maximum of min_t f_t on pieces with a few candidate functions.

    Each pair of functions is compared on the intervals where both keep their form (before,
    on or after their segment): there f_t² is a quadratic in s, so they cross where a
    quadratic vanishes. Between consecutive crossings one function is the least; it is found
    at the middle and integrated exactly.

    The intervals, and then the pieces, are processed in blocks of about ``_ENVELOPE_BLOCK``
    (their many temporaries then stay in the cache); only the sort of the cut points takes
    them all at once, so the results do not depend on the blocks.

    Args:
        length: float array, shape (m,): piece lengths.
        frame: the segment frames (``axis_frame``) of the w rows of each piece, a float
            array of shape (5, w, m) (the long axis last, where numpy loops fastest).
        fid: int64 array, shape (w, m): function id of each row (equal ids: equal functions).
    Returns:
        (integral, maximum), float arrays of shape (m,).
    """
    w, m = frame.shape[1:]
    inner_piece, inner_s = _crossings(length, frame, fid)
    inner_len = length[inner_piece]
    inner_s = np.minimum(np.maximum(inner_s, 0.0), inner_len)
    del inner_len
    # Sort by piece, then exactly by position: by position, then stably by piece (a radix
    # sort of 16-bit ids within an envelope batch). A key mixing both would order points
    # closer than its resolution either way, coarser in pieces further down the batch, and
    # the merging below would then keep other points: a piece's numbers would depend on its
    # batch. Equal positions are equal points.
    order = np.argsort(inner_s)
    ids = inner_piece[order]
    order = order[np.argsort(ids.astype(np.uint16) if m <= 1 << 16 else ids, kind="stable")]
    inner_piece, inner_s = inner_piece[order], inner_s[order]
    del order, ids
    integral = np.empty(m)
    maximum = np.zeros(m)
    # Blocks of pieces with about _ENVELOPE_BLOCK cut points: each piece's points are a run of
    # the sorted ones.
    per_block = max(1, int(_ENVELOPE_BLOCK * m // max(len(inner_piece), 1)))
    edges = np.searchsorted(inner_piece, np.arange(0, m + per_block, per_block))
    for k, p0 in enumerate(range(0, m, per_block)):
        p1 = min(p0 + per_block, m)
        i0, i1 = edges[k], edges[k + 1]
        integral[p0:p1], maximum[p0:p1] = _envelope_parts(
            length[p0:p1], frame[:, :, p0:p1], inner_piece[i0:i1] - p0, inner_s[i0:i1])
    return integral, maximum


def _crossings(length, frame, fid):
    """The cut points inside the pieces of ``_envelope``, unsorted: where two functions
    cross, and the ends of the intervals where two are equal. Returns (piece, s) arrays in
    the order of the intervals (k, pair, piece) of the (5, pairs, m) array of ``_envelope``:
    the starts and then the ends of the intervals of equal functions, then the first and
    then the second roots."""
    tau0, alpha, eta0, beta, seg_len = frame
    w, m = tau0.shape
    e1, e2, backward = regime_cuts(tau0, alpha, seg_len, length)
    # Squared distance c2 s² + c1 s + c0 in each regime, in their order along s: (3, 3 w m).
    quad = _regime_quadratics(tau0, alpha, eta0, beta, seg_len, backward).reshape(3, -1)

    # The intervals of each pair of functions between the points where one changes form:
    # the sorted cuts of both, merged; shape (6, pairs, m) for the edges.
    ic, jc = _PAIRS[w]
    n_pairs = len(ic)
    e1i, e2i, e1j, e2j = e1[ic], e2[ic], e1[jc], e2[jc]
    inner_lo, inner_hi = np.maximum(e1i, e1j), np.minimum(e2i, e2j)
    edges = np.empty((6, n_pairs, m))
    edges[0] = 0.0
    np.minimum(e1i, e1j, out=edges[1])
    np.minimum(inner_lo, inner_hi, out=edges[2])
    np.maximum(inner_lo, inner_hi, out=edges[3])
    np.maximum(e2i, e2j, out=edges[4])
    edges[5] = length
    start = edges[:-1]
    # On each interval each function is in the regime after its cuts at or before the start.
    regime_i = (e1i <= start).view(np.int8) + (e2i <= start).view(np.int8)
    regime_j = (e1j <= start).view(np.int8) + (e2j <= start).view(np.int8)
    del e1i, e2i, e1j, e2j, inner_lo, inner_hi
    live = edges[1:] > start
    live &= fid[ic] != fid[jc]
    at = np.flatnonzero(live)  # the interval (k, pair, piece) of the (5, pairs, m) array
    del live, start
    edges = edges.reshape(-1)
    # The columns of the two functions' quadratics in ``quad``, for every interval (cheaper
    # than index arithmetic on the live ones).
    size = w * m
    qi, qj = regime_i.astype(np.int64), regime_j.astype(np.int64)
    del regime_i, regime_j
    qi *= size
    qi += ic[:, None] * m + np.arange(m)
    qj *= size
    qj += jc[:, None] * m + np.arange(m)
    qi, qj = qi.reshape(-1), qj.reshape(-1)
    n_slots = n_pairs * m
    same_piece, same_lo, same_hi, root_piece, root_s = [], [], [], ([], []), ([], [])
    for b in range(0, len(at), _ENVELOPE_BLOCK):
        a = at[b:b + _ENVELOPE_BLOCK]
        lo, hi = edges[a], edges[a + n_slots]
        piece = a // m  # integer division by a scalar is fast, unlike %
        piece *= m
        np.subtract(a, piece, out=piece)
        a2, a1, a0 = np.take(quad, qi[a], axis=1)
        b2, b1, b0 = np.take(quad, qj[a], axis=1)
        d2, d1, d0 = a2 - b2, a1 - b1, a0 - b0
        interval_len = length[piece]
        # Where two functions are equal on a whole interval (the distance to a vertex both
        # segments end at), the least one can change at the interval's ends.
        # The test on d0 first (it seldom holds), then the others on the few that pass.
        same = a0 + b0
        same += interval_len * interval_len
        same *= _ROOT_SLACK
        same = np.flatnonzero(np.abs(d0) <= same)
        if len(same):
            same = same[
                (np.abs(d2[same]) <= _ROOT_SLACK)
                & (np.abs(d1[same]) <= _ROOT_SLACK * (np.abs(a1[same]) + np.abs(b1[same])
                                                       + interval_len[same]))
            ]
        del a2, a1, a0, b2, b1, b0
        # Two functions that touch (at a vertex of the other boundary that the piece passes
        # through, both are 0 there) give a double root: kept despite rounding.
        same_piece.append(piece[same])
        same_lo.append(lo[same])
        same_hi.append(hi[same])
        del same
        near = _ROOT_SLACK * interval_len
        del interval_len
        lo -= near
        hi += near
        del near
        for k, root in enumerate(quadratic_roots(d2, d1, d0, _ROOT_SLACK)):
            inside = np.flatnonzero((root >= lo) & (root <= hi))
            root_piece[k].append(piece[inside])
            root_s[k].append(root[inside])
        del piece, lo, hi, d2, d1, d0
    pieces = same_piece + same_piece + root_piece[0] + root_piece[1]
    if not pieces:
        return np.zeros(0, np.int64), np.zeros(0)
    return np.concatenate(pieces), np.concatenate(same_lo + same_hi + root_s[0] + root_s[1])


def _envelope_parts(length, frame, inner_piece, inner_s):
    """``_envelope`` of pieces given their cut points (sorted by piece, then position)."""
    w, m = frame.shape[1:]
    # Each piece's cut points: its start (s = 0), those inside in order, its end (s = L).
    count = np.bincount(inner_piece, minlength=m) + 2
    point_piece = group_ids(count)
    first = np.cumsum(count) - count
    point_s = np.empty(len(point_piece))
    point_s[first] = 0.0
    point_s[first + count - 1] = length
    point_s[np.arange(len(inner_piece)) + 2 * inner_piece + 1] = inner_s
    point_len = length[point_piece]
    del inner_piece, inner_s, count, first
    # A cut point closer than the slack to the one before it (found twice, up to rounding) is
    # dropped, and so is one that close to the end of its piece: its neighbouring parts are
    # merged. The least function on the merged part differs from the true least one by at
    # most twice the slack on a stretch of that width, so the error is of the slack squared,
    # and rounding cannot change the parts in a way that matters.
    gap = _ROOT_SLACK * point_len
    start = run_starts(point_piece)  # s = 0
    end = np.append(start[1:], True)  # s = L
    step = np.empty(len(point_s))
    step[:1] = 0.0
    np.subtract(point_s[1:], point_s[:-1], out=step[1:])
    keep = start | end | ((step > gap) & (point_len - point_s > gap))
    keep = np.flatnonzero(keep)
    point_piece, point_s = point_piece[keep], point_s[keep]
    part = np.flatnonzero(~start[keep][1:])
    part_piece = point_piece[part]
    s_lo, s_hi = point_s[part], point_s[part + 1]
    del point_piece, point_s, point_len, part, keep, start, end, gap

    # The least function on each part, found at its middle (the first of equal ones).
    frame = np.ascontiguousarray(frame).reshape(5, -1)  # row t of piece p: column t m + p
    mid = 0.5 * (s_lo + s_hi)
    chosen = np.zeros(len(mid), dtype=np.int64)
    least = _squared_distance(*np.take(frame, part_piece, axis=1), mid)
    for t in range(1, w):
        d = _squared_distance(*np.take(frame, part_piece + t * m, axis=1), mid)
        lower = d < least
        chosen[lower] = t
        np.minimum(least, d, out=least)
    del mid, least
    # Consecutive parts of a piece with the same least function are integrated as one.
    run = np.flatnonzero(run_starts(chosen) | run_starts(part_piece))
    last = np.append(run[1:], len(chosen)) - 1
    part_piece, s_lo, s_hi = part_piece[run], s_lo[run], s_hi[last]
    row = chosen[run] * m + part_piece
    t0, al, e0, be, sl = np.take(frame, row, axis=1)
    t0 += al * s_lo
    e0 += be * s_lo
    part_len = s_hi - s_lo
    part_integral = frame_integral(t0, al, e0, be, sl, part_len)
    # The distance at the part's start (s = 0: no need to move along).
    over = t0 - np.minimum(np.maximum(t0, 0.0), sl)
    part_max = np.maximum(hypot(over, e0), frame_point_distance(t0, al, e0, be, sl, part_len))
    integral = np.bincount(part_piece, weights=part_integral, minlength=m)
    maximum = np.zeros(m)
    _raise_max(maximum, part_piece, part_max)
    return integral, maximum


def _regime_quadratics(tau0, alpha, eta0, beta, seg_len, backward):
    """Coefficients (c2, c1, c0) of the squared distance c2 s² + c1 s + c0 in each regime of
    each segment, in their order along s (``regime_cuts``): an array of shape
    (3 coefficients, 3 regimes) + tau0.shape: before a, |x - a|² = (tau0 + alpha s)² +
    (eta0 + beta s)²; on the segment, eta²; after b, as before a with tau0 - seg_len."""
    quad = np.empty((3, 3) + tau0.shape)
    c2, c1, c0 = quad
    c2[0] = c2[2] = 1.0
    eb = eta0 * beta
    e2 = eta0 * eta0
    # The end point met first along s, then the one met last: a then b, or b then a
    # (tau0 - seg_len * backward: exactly tau0 - seg_len or tau0 - 0, without a branch on
    # the signs). Computed in place in ``quad``.
    for k, flip in ((0, backward), (2, ~backward)):
        end = seg_len * flip
        np.subtract(tau0, end, out=end)
        np.multiply(end, alpha, out=c1[k])
        c1[k] += eb
        c1[k] *= 2.0
        np.multiply(end, end, out=c0[k])
        c0[k] += e2
    np.multiply(beta, beta, out=c2[1])
    np.multiply(eb, 2.0, out=c1[1])
    c0[1] = e2
    return quad


def _squared_distance(tau0, alpha, eta0, beta, seg_len, s):
    # In place: two temporaries instead of ten.
    tau = alpha * s
    tau += tau0
    eta = beta * s
    eta += eta0
    over = np.maximum(tau, 0.0)
    np.minimum(over, seg_len, out=over)
    np.subtract(tau, over, out=over)
    over *= over
    eta *= eta
    over += eta
    return over


def _piece_bounds(length, rows: _Rows, frame):
    """Brackets of the integral and of the maximum of min_t f_t on pieces (rows grouped by
    piece): 1-Lipschitz bounds from the ends and the middle, tangents at the middle below each
    f_t, 3-point chords above it, and the distance between the piece and the segments.

    Returns (integral_lo, integral_hi, max_lo, max_hi, the rows' distances at the middle).
    """
    half = 0.5 * length
    pr = rows.piece
    h = half[pr]
    d0, d1 = rows.d0, rows.d1
    dm, slope = frame_distance(*frame, h)
    starts = group_starts(pr)

    def least(values):
        return np.minimum.reduceat(values, starts)

    f0, fm, f1 = least(d0), least(dm), least(d1)
    lip_lo0, lip_hi0 = _lipschitz_integral(f0, fm, half)
    lip_lo1, lip_hi1 = _lipschitz_integral(fm, f1, half)
    # min_t (tangent of f_t at the middle) is concave: above its 3-point chord.
    tangent_lo = 0.5 * half * (least(dm - slope * h) + 2 * fm + least(dm + slope * h))
    integral_lo = np.maximum(np.maximum(lip_lo0 + lip_lo1, tangent_lo), length * least(rows.dmin))
    chord_hi = least(0.5 * h * (d0 + 2 * dm + d1))
    integral_hi = np.maximum(np.minimum(lip_hi0 + lip_hi1, chord_hi), integral_lo)
    max_lo = np.maximum(np.maximum(f0, fm), f1)
    max_hi = np.minimum(
        np.maximum(least(np.maximum(d0, dm)), least(np.maximum(dm, d1))),
        0.5 * (np.maximum(f0 + fm, fm + f1) + half),
    )
    return integral_lo, integral_hi, max_lo, np.maximum(max_hi, max_lo), dm


def _lipschitz_integral(a, b, h):
    """Lower and upper bounds of ∫ f over [0, h] for f >= 0, 1-Lipschitz, f(0)=a, f(h)=b."""
    s = np.minimum(np.maximum(0.5 * (b - a + h), 0.0), h)  # where a + s meets b + (h - s)
    upper = a * s + 0.5 * s * s + b * (h - s) + 0.5 * (h - s) ** 2
    s = np.minimum(np.maximum(0.5 * (a - b + h), 0.0), h)  # where a - s meets b - (h - s)
    lower = np.where(
        a - s >= 0,
        a * s - 0.5 * s * s + b * (h - s) - 0.5 * (h - s) ** 2,
        0.5 * (a * a + b * b),
    )
    return lower, upper


def _halve(bounds: _Boundaries, pieces: _Pieces, rows: _Rows, d_mid):
    """Children [start, middle] and [middle, end] of each piece, with the parent's candidates
    that can still be nearest on each (within the child's upper bound U of the distance).

    Children 2j and 2j + 1 replace parent j; the rows of parent j, [s, e), become rows
    [2s, s + e) of child 2j and [s + e, 2e) of child 2j + 1, so rows stay grouped by piece.
    """
    k = len(pieces.pair)
    mx, my = 0.5 * (pieces.x0 + pieces.x1), 0.5 * (pieces.y0 + pieces.y1)
    children = _Pieces(np.empty(2 * k), np.empty(2 * k), np.empty(2 * k), np.empty(2 * k),
                       np.repeat(pieces.pair, 2),
                       None if pieces.weight is None else np.repeat(pieces.weight, 2))
    children.x0[0::2], children.x0[1::2] = pieces.x0, mx
    children.y0[0::2], children.y0[1::2] = pieces.y0, my
    children.x1[0::2], children.x1[1::2] = mx, pieces.x1
    children.y1[0::2], children.y1[1::2] = my, pieces.y1

    starts = group_starts(rows.piece)
    counts = np.diff(np.r_[starts, len(rows.piece)])
    s_of_row = np.repeat(starts, counts)
    r = np.arange(len(rows.piece))
    first, second = r + s_of_row, r + s_of_row + np.repeat(counts, counts)
    n_rows = 2 * len(r)
    piece = np.empty(n_rows, np.int64)
    seg = np.empty(n_rows, np.int64)
    d0, d1 = np.empty(n_rows), np.empty(n_rows)
    piece[first], piece[second] = 2 * rows.piece, 2 * rows.piece + 1
    seg[first] = seg[second] = rows.seg
    d0[first], d0[second] = rows.d0, d_mid
    d1[first], d1[second] = d_mid, rows.d1

    c_len = 0.5 * hypot(pieces.x1 - pieces.x0, pieces.y1 - pieces.y0)
    worst = np.maximum(d0, d1)
    c_starts = group_starts(piece)
    best_worst = np.minimum.reduceat(worst, c_starts)
    bound = np.minimum(best_worst, 0.5 * (np.minimum.reduceat(d0, c_starts)
                                          + np.minimum.reduceat(d1, c_starts)
                                          + np.repeat(c_len, 2)))
    ax, ay, bx, by = bounds.rows_xy(seg)
    limit = bound[piece] + bounds.slack[children.pair[piece]]
    dmin = _distance_to_piece(children.x0[piece], children.y0[piece], children.x1[piece],
                              children.y1[piece], ax, ay, bx, by, d0, d1, limit)
    keep = np.flatnonzero((dmin <= limit) | (worst == best_worst[piece]))
    return children, _Rows(piece[keep], seg[keep], d0[keep], d1[keep], dmin[keep])
