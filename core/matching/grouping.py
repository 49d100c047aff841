"""Groups of reference fields: strata, size classes, and bootstrap resampling over them.

Definitions follow the agribound 1.0 documentation, "Evaluation" (section "Strata, size classes
and confidence intervals").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..util.checks import is_missing

#: Confidence level of the percentile bootstrap intervals.
BOOTSTRAP_CONFIDENCE_LEVEL = 0.95

#: Mantissas of the "auto" size-class ladder (1-2-5 series).
_AUTO_MANTISSAS = (1.0, 2.0, 5.0)

#: Bootstrap resamples are summed in chunks of about this many (resample x field) weights.
_BOOTSTRAP_CHUNK_CELLS = 2_000_000


@dataclass(frozen=True)
class Groups:
    """A partition of the evaluated reference fields.

    Attributes:
        codes: int64, shape (n_ref,): group of each evaluated reference field, -1 for none.
        keys: group names (str), in code order.
        values: per evaluated reference field, the original value (strata) or the class name
            (size classes); None where missing.
        edges: size-class edges in ha (size classes only).
        n_missing: fields in no group.
    """

    codes: np.ndarray
    keys: list
    values: list
    edges: np.ndarray | None = None
    n_missing: int = 0

    def members(self, code: int) -> np.ndarray:
        return np.flatnonzero(self.codes == code)


def strata_groups(values_per_field) -> Groups:
    """Strata from one value per evaluated reference field; missing values belong to none.

    Keys are the distinct values sorted (by str when they do not compare), as strings.
    Raises ValueError when two distinct values have the same string form.
    """
    values = list(values_per_field)
    missing = np.array([is_missing(v) for v in values], dtype=bool)
    unique = list(dict.fromkeys(v for v, m in zip(values, missing) if not m))
    try:
        unique.sort()
    except TypeError:
        unique.sort(key=str)
    keys = [str(v) for v in unique]
    if len(set(keys)) != len(keys):
        raise ValueError("strata values must be distinct after conversion to text")
    lookup = {v: k for k, v in enumerate(unique)}
    codes = np.array(
        [-1 if m else lookup[v] for v, m in zip(values, missing)], dtype=np.int64
    ).reshape(-1)
    return Groups(
        codes=codes,
        keys=keys,
        values=[None if m else v for v, m in zip(values, missing)],
        n_missing=int(missing.sum()),
    )


def parse_size_bins(text: str):
    """The SIZE_BINS text: "" → None, "auto" → "auto", "0, 0.5, 1, inf" → edges in ha.

    Raises ValueError (naming SIZE_BINS) for anything else, including edges that are not
    strictly increasing, negative, or non-finite before the last.
    """
    text = (text or "").strip()
    if not text:
        return None
    if text.lower() == "auto":
        return "auto"
    try:
        edges = [float(part) for part in text.replace(";", ",").split(",") if part.strip()]
    except ValueError:
        raise ValueError(
            f"SIZE_BINS must be empty, 'auto' or comma-separated edges in ha, got {text!r}"
        ) from None
    check_size_edges(edges)
    return edges


def check_size_edges(edges) -> np.ndarray:
    """Validate size-class edges in ha; returns them as a float array.

    Raises ValueError unless there are at least two strictly increasing, non-negative edges,
    all finite except possibly the last (which may be inf).
    """
    edges = np.asarray(edges, dtype=float)
    if (
        edges.ndim != 1
        or len(edges) < 2
        or np.any(np.isnan(edges))
        or np.any(np.diff(edges) <= 0)
        or edges[0] < 0
        or not np.all(np.isfinite(edges[:-1]))
    ):
        raise ValueError(
            "SIZE_BINS: size-class edges must be at least two strictly increasing, "
            f"non-negative numbers in ha (the last may be inf), got {list(edges)}"
        )
    return edges


def auto_size_edges(area_ha: np.ndarray) -> np.ndarray:
    """Edges from the 1-2-5 series (…, 0.5, 1, 2, 5, 10, … ha) spanning the given areas."""
    lo, hi = float(area_ha.min()), float(area_ha.max())
    k0 = math.floor(math.log10(lo)) - 1
    k1 = math.ceil(math.log10(hi)) + 1
    ladder = sorted(m * 10.0**k for k in range(k0, k1 + 1) for m in _AUTO_MANTISSAS)
    ladder = np.array([float(f"{e:.12g}") for e in ladder])
    first = ladder[ladder <= lo].max()
    last = ladder[ladder > hi].min()
    return ladder[(ladder >= first) & (ladder <= last)]


def size_groups(size_bins, area_m2: np.ndarray) -> Groups:
    """Size classes of the evaluated reference fields by area.

    ``size_bins``: "auto" or edges in ha. Classes are [lower, upper) except the last,
    [lower, upper]; fields outside the edges belong to none.
    """
    area_ha = np.asarray(area_m2, dtype=float) / 1e4
    if isinstance(size_bins, str):
        if size_bins != "auto":
            raise ValueError(f"SIZE_BINS must be 'auto' or edges in ha, got {size_bins!r}")
        edges = auto_size_edges(area_ha) if len(area_ha) else np.zeros(0)
    else:
        edges = check_size_edges(size_bins)
    codes = np.full(len(area_ha), -1, dtype=np.int64)
    keys: list[str] = []
    if len(edges) >= 2:
        n_bins = len(edges) - 1
        codes = np.searchsorted(edges, area_ha, side="right").astype(np.int64) - 1
        codes[area_ha == edges[-1]] = n_bins - 1
        codes[(codes < 0) | (codes >= n_bins)] = -1
        keys = [f"{lo:g}-{hi:g}" for lo, hi in zip(edges[:-1], edges[1:])]
        if len(set(keys)) != len(keys):  # edges that differ beyond 6 significant digits
            keys = [f"{float(lo)!r}-{float(hi)!r}" for lo, hi in zip(edges[:-1], edges[1:])]
    return Groups(
        codes=codes,
        keys=keys,
        values=[keys[c] if c >= 0 else None for c in codes],
        edges=edges,
        n_missing=int(np.sum(codes < 0)),
    )


def percentile_interval(values: np.ndarray) -> tuple[list[float], int]:
    """Percentile interval at BOOTSTRAP_CONFIDENCE_LEVEL of the finite values, and how many
    values were undefined (NaN)."""
    values = np.asarray(values, dtype=float)
    finite = values[np.isfinite(values)]
    n_undefined = int(len(values) - len(finite))
    if len(finite) == 0:
        return [float("nan"), float("nan")], n_undefined
    alpha = (1.0 - BOOTSTRAP_CONFIDENCE_LEVEL) / 2.0
    lo, hi = np.percentile(finite, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    return [float(lo), float(hi)], n_undefined


def bootstrap_weights(n_resamples: int, seed: int, pool_codes: np.ndarray, progress=None):
    """Yield (first, weights) chunks of bootstrap weights over the evaluated reference fields.

    Each resample draws, within each pool (stratum; fields without a stratum form their own
    pool), as many fields as the pool holds, with replacement; ``weights[b, i]`` is how often
    field i was drawn in resample ``first + b``. Resample b uses its own generator seeded by
    the b-th child of ``numpy.random.SeedSequence(seed)``, so results do not depend on chunking.
    """
    n = len(pool_codes)
    pools = [np.flatnonzero(pool_codes == c) for c in np.unique(pool_codes)]
    children = np.random.SeedSequence(seed).spawn(n_resamples)
    chunk = max(1, min(n_resamples, _BOOTSTRAP_CHUNK_CELLS // max(n, 1)))
    for first in range(0, n_resamples, chunk):
        last = min(n_resamples, first + chunk)
        weights = np.zeros((last - first, n))
        for b in range(first, last):
            rng = np.random.default_rng(children[b])
            for pool in pools:
                draw = rng.integers(0, len(pool), size=len(pool))
                weights[b - first, pool] = np.bincount(draw, minlength=len(pool))
        if progress is not None:
            progress(last / n_resamples)
        yield first, weights
