"""core.util.parallel: chunks on shared worker slots, two stages side by side."""

import threading
import time

import pytest

from iou_evaluation.core.util import parallel
from iou_evaluation.core.util.parallel import run_beside, run_chunks


class _Concurrency:
    """A chunk function that records how many chunks run at the same moment."""

    def __init__(self):
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0

    def __call__(self, chunk):
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(0.01)
        with self.lock:
            self.running -= 1
        return chunk * 10


@pytest.fixture
def two_workers(monkeypatch):
    monkeypatch.setattr(parallel, "WORKERS", 2)


def test_run_chunks_keeps_the_order_of_the_chunks(two_workers):
    assert run_chunks(lambda c: c * c, range(7)) == [0, 1, 4, 9, 16, 25, 36]


def test_two_stages_side_by_side_never_run_more_chunks_than_workers(two_workers):
    work = _Concurrency()
    first, second = run_beside(
        lambda advance: run_chunks(work, range(12), advance),
        lambda advance: run_chunks(work, range(100, 112), advance),
    )
    assert first == [10 * k for k in range(12)]
    assert second == [10 * k for k in range(100, 112)]
    assert work.most == 2  # four pool threads, two slots


def test_a_chunk_that_runs_chunks_runs_them_on_its_own_thread(two_workers):
    # Both slots held by the outer chunks: inner chunks waiting for a slot would never start.
    def outer(chunk):
        return sum(run_chunks(lambda c: c + chunk, range(3)))

    assert run_chunks(outer, [0, 10, 20]) == [3, 33, 63]


def test_run_beside_reports_the_weighted_mean_of_both_fractions(two_workers):
    reports = []
    release = threading.Event()

    def main(advance):
        advance(0.5)  # beside is at 0 until it is released: (3 * 0.5 + 1 * 0) / 4
        release.set()
        return "main"

    def beside(advance):
        release.wait(5)
        advance(1.0)
        return "beside"

    assert run_beside(main, beside, reports.append, weights=(3.0, 1.0)) == ("main", "beside")
    assert reports == [0.375, 0.625]


def test_a_failure_beside_stops_main_at_its_next_progress_call(two_workers):
    calls = []

    def main(advance):
        for k in range(200):
            time.sleep(0.005)
            advance(k / 200)
            calls.append(k)
        return "finished"

    def beside(advance):
        raise ValueError("beside failed")

    with pytest.raises(ValueError, match="beside failed"):
        run_beside(main, beside)
    assert len(calls) < 200


def test_a_cancel_in_main_stops_beside_and_propagates(two_workers):
    beside_calls = []

    def main(advance):
        time.sleep(0.02)
        raise KeyboardInterrupt  # any exception, not only Exception

    def beside(advance):
        for k in range(200):
            time.sleep(0.005)
            advance(k / 200)
            beside_calls.append(k)

    with pytest.raises(KeyboardInterrupt):
        run_beside(main, beside)
    assert len(beside_calls) < 200


def test_a_progress_that_raises_stops_both(two_workers):
    calls = []

    def progress(fraction):
        if fraction > 0.1:
            raise RuntimeError("canceled")

    def stage(name):
        def run(advance):
            for k in range(100):
                time.sleep(0.002)
                advance(k / 100)
                calls.append(name)

        return run

    with pytest.raises(RuntimeError, match="canceled"):
        run_beside(stage("main"), stage("beside"), progress)
    assert calls.count("main") < 100 and calls.count("beside") < 100
