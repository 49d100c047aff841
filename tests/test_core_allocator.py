"""core.util.allocator: glibc's allocator is set while evaluations run, and handed back after."""

import platform
import threading

import pytest
import shapely

from iou_evaluation.core import evaluate
from iou_evaluation.core.util import allocator

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
MIB = 1 << 20


class _FakeLibc:
    """Records mallopt / malloc_trim calls; mallopt accepts everything (returns 1)."""

    def __init__(self):
        self.calls = []

    def mallopt(self, parameter, value):
        self.calls.append(("mallopt", parameter, value))
        return 1

    def malloc_trim(self, pad):
        self.calls.append(("malloc_trim", pad))
        return 1


@pytest.fixture
def libc(monkeypatch):
    assert allocator.active() == 0
    fake = _FakeLibc()
    monkeypatch.setattr(allocator, "_libc", fake)
    yield fake
    assert allocator.active() == 0


def test_the_first_enter_sets_the_three_parameters_and_the_last_leave_hands_memory_back(libc):
    allocator.enter()
    assert libc.calls == [
        ("mallopt", M_MMAP_THRESHOLD, 32 * MIB),
        ("mallopt", M_TRIM_THRESHOLD, 64 * MIB),
        ("mallopt", M_TOP_PAD, 64 * MIB),
    ]
    allocator.enter()  # a second evaluation at the same time changes nothing
    allocator.leave()
    assert len(libc.calls) == 3 and allocator.active() == 1
    allocator.leave()
    assert libc.calls[3:] == [("mallopt", M_TOP_PAD, 128 * 1024), ("malloc_trim", 0)]


def test_trim_hands_memory_back_only_while_no_evaluation_runs(libc):
    allocator.trim()
    assert libc.calls == [("malloc_trim", 0)]
    allocator.enter()
    allocator.trim()  # an evaluation keeps its freed memory for reuse
    assert [c[0] for c in libc.calls].count("malloc_trim") == 1
    allocator.leave()
    assert [c[0] for c in libc.calls].count("malloc_trim") == 2


def test_release_hands_memory_back_even_while_an_evaluation_runs(libc):
    allocator.release()
    allocator.enter()
    allocator.release()  # between work units: the next unit's memory is fresh anyway
    allocator.leave()
    assert [c[0] for c in libc.calls].count("malloc_trim") == 3


def test_a_unit_by_unit_run_releases_memory_after_the_split_and_after_each_unit(libc):
    boxes = [shapely.box(20 * k, 0, 20 * k + 10, 10) for k in range(5)]  # 5 components
    result = evaluate(boxes, boxes, work_unit_features=2)  # a unit of each
    assert result.metrics["count_tp"] == 5
    # 1 after the split, 5 after the units, 1 when the evaluation ends.
    assert [c[0] for c in libc.calls].count("malloc_trim") == 1 + 5 + 1


def test_leave_without_enter_is_a_programming_error(libc):
    with pytest.raises(RuntimeError):
        allocator.leave()


def test_without_glibc_only_the_count_changes(monkeypatch):
    monkeypatch.setattr(allocator, "_libc", None)
    allocator.enter()
    assert allocator.active() == 1
    allocator.leave()
    assert allocator.active() == 0


def test_evaluations_from_two_threads_set_once_and_hand_back_once(libc):
    both_inside, both_counted = threading.Barrier(2), threading.Barrier(2)

    @allocator.tuned
    def work():
        both_inside.wait(timeout=5)
        count = allocator.active()
        both_counted.wait(timeout=5)
        return count

    results = []
    threads = [threading.Thread(target=lambda: results.append(work())) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [2, 2]
    assert [c[0] for c in libc.calls].count("malloc_trim") == 1
    assert len(libc.calls) == 5


def test_evaluate_leaves_the_allocator_after_a_result_and_after_an_error(libc):
    box = shapely.box(0, 0, 10, 10)
    result = evaluate([box], [box])
    assert result.metrics["count_tp"] == 1
    assert libc.calls[-1] == ("malloc_trim", 0)
    n_calls = len(libc.calls)
    with pytest.raises(ValueError):
        evaluate([box], [box], iou_threshold=2.0)
    assert libc.calls[-1] == ("malloc_trim", 0) and len(libc.calls) == 2 * n_calls


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)
def test_this_machines_glibc_is_found_and_accepts_the_lasting_values():
    assert allocator._libc is not None
    for parameter, value in (
        (M_MMAP_THRESHOLD, allocator.MMAP_THRESHOLD),
        (M_TRIM_THRESHOLD, allocator.TRIM_THRESHOLD),
        (M_TOP_PAD, allocator.DEFAULT_TOP_PAD),
    ):
        assert allocator._libc.mallopt(parameter, value) == 1  # 0 would be a refusal
