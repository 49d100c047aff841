"""The memory check seen from QGIS: a run that would not fit stops with a processing error
naming the stage, not with a traceback (nor by taking QGIS down)."""

import pytest
from iou_evaluation.core.util.memory import MEMORY_LIMIT_ENV
from test_provider import run, small_layers


def test_a_run_that_would_not_fit_stops_with_a_clear_message(ioueval_provider, monkeypatch):
    from qgis.core import QgsProcessingException

    monkeypatch.setenv(MEMORY_LIMIT_ENV, "0.001")  # 1 kB
    reference, predicted = small_layers()
    with pytest.raises(QgsProcessingException,
                       match=r"boundary distances: reference row \d+ / predicted row \d+"):
        run({"PREDICTED": predicted, "REFERENCE": reference})
