"""The one zero-division rule (core/util/rates.py): num / den, ``zero_division`` where den is
0, NaN propagating."""

import math

import numpy as np
import pytest

from iou_evaluation.core.util.rates import check_zero_division, safe_divide


def test_safe_divide_divides_and_takes_the_zero_division_value_on_a_zero_denominator():
    out = safe_divide([1, 3, 0, 2], [4, 0, 0, 8], zero_division=-7.0)
    assert out.tolist() == [0.25, -7.0, -7.0, 0.25]
    assert safe_divide([3.0], [4.0]).tolist() == [0.75]


def test_safe_divide_propagates_nan_rather_than_replacing_it():
    out = safe_divide([np.nan, 1.0], [2.0, np.nan], zero_division=0.0)
    assert math.isnan(out[0]) and math.isnan(out[1])
    assert math.isnan(float(safe_divide(0, 0, zero_division=np.nan)))


def test_check_zero_division_accepts_rates_and_nan_and_names_the_parameter():
    assert check_zero_division(1) == 1.0
    assert math.isnan(check_zero_division(float("nan")))
    for bad in (True, 1.5, -0.1, "0"):
        with pytest.raises(ValueError, match="empty_rate"):
            check_zero_division(bad, "empty_rate")
