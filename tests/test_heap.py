"""Full collections wait while a run holds its items; the thresholds come back after, even on an error."""
import gc

import pytest

import flamespark as fs
from flamespark.runtime.heap import full_collections_deferred


def test_full_collections_wait_for_the_block_and_the_thresholds_come_back():
    before = gc.get_threshold()
    with full_collections_deferred():
        young, middle, full = gc.get_threshold()
        assert (young, middle) == before[:2] and full >= 2**31 - 1
    assert gc.get_threshold() == before


def test_the_thresholds_come_back_when_the_block_raises():
    before = gc.get_threshold()
    with pytest.raises(ZeroDivisionError):
        with full_collections_deferred():
            1 / 0
    assert gc.get_threshold() == before


def test_a_local_run_runs_with_full_collections_deferred():
    seen = []
    graph = fs.Graph("g")
    graph.source("s").map(lambda v: seen.append(gc.get_threshold()[2]) or v).sink("out")
    before = gc.get_threshold()
    assert fs.run(graph, {"s": [(1, 1), (2, 2)]}).outputs == {"out": [1, 2]}
    assert seen and all(full >= 2**31 - 1 for full in seen)
    assert gc.get_threshold() == before
