"""Boundary metrics of matched pairs: UTM zones (zones), distances (distances; the exact solver
behind them in _exact), lengths within a tolerance, pairs too wide for a zone, the boundary F1
curve.
"""

from .zones import (  # noqa: F401
    utm_epsg,
    centroid_utm_epsg,
    ZonedLayer,
    zoned_layer,
    utm_epsg_codes,
    utm_crs,
)
from .distances import (  # noqa: F401
    BOUNDARY_SAMPLE_SPACING_M,
    BOUNDARY_MAX_SAMPLES,
    PairDistances,
    matched_distances_in_utm,
    check_same_space,
    sample_spacing,
    pair_boundary_distances,
    simplified_boundaries,
    simplified_in_runs,
)
from .tolerance import (  # noqa: F401
    tolerance_lengths_in_utm,
    tolerance_lengths_in_utm_at,
    boundary_within_tolerance,
)
from .wide import (  # noqa: F401
    WIDE_LONGITUDE_DEG,
    POLAR_LATITUDE_DEG,
    lonlat_extent,
    lonlat_extent_of_large,
    wide_pairs,
    scale_gradients,
    conformal_proj4,
    scale_group,
    scale_factor,
    mercator_scale,
    polar_stereographic_scale,
    method_label,
    to_conformal,
    to_crs_in_parts,
    pairs_to_conformal,
)
from .curve import (  # noqa: F401
    TOLERANCE_MULTIPLES,
    CURVE_SAMPLE_SIZE,
    CURVE_SAMPLE_SEED,
    boundary_f1_by_tolerance,
)

__all__ = [
    "BOUNDARY_MAX_SAMPLES",
    "BOUNDARY_SAMPLE_SPACING_M",
    "CURVE_SAMPLE_SEED",
    "CURVE_SAMPLE_SIZE",
    "POLAR_LATITUDE_DEG",
    "PairDistances",
    "TOLERANCE_MULTIPLES",
    "WIDE_LONGITUDE_DEG",
    "ZonedLayer",
    "boundary_f1_by_tolerance",
    "boundary_within_tolerance",
    "centroid_utm_epsg",
    "check_same_space",
    "conformal_proj4",
    "lonlat_extent",
    "lonlat_extent_of_large",
    "matched_distances_in_utm",
    "mercator_scale",
    "method_label",
    "pair_boundary_distances",
    "pairs_to_conformal",
    "polar_stereographic_scale",
    "sample_spacing",
    "scale_factor",
    "scale_gradients",
    "scale_group",
    "simplified_boundaries",
    "simplified_in_runs",
    "to_conformal",
    "to_crs_in_parts",
    "tolerance_lengths_in_utm",
    "tolerance_lengths_in_utm_at",
    "utm_crs",
    "utm_epsg",
    "utm_epsg_codes",
    "wide_pairs",
    "zoned_layer",
]
