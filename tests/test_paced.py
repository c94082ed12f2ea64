"""Paced local runs: events arrive at a rate, and whatever waits is applied at once in meta order."""
import time

import pytest
from hypothesis import given, settings

import flamespark as fs
from tests import graphs
from tests.reference import reference_run
from tests.test_exactness import number_case

MODES = ["optimistic", "buffered"]


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=40, deadline=None)
@given(case=number_case())
def test_a_paced_run_matches_the_in_order_run(mode, case):
    latency, events, arrival, _ = case
    graph = graphs.chained_stateful()
    result = fs.run(graph, {"numbers": arrival}, mode=mode, reorder_latency=latency, rate=20_000)
    assert result.outputs == reference_run(graph, {"numbers": events})


def test_events_that_arrived_while_the_engine_was_busy_are_applied_in_meta_order():
    """Offered far faster than it is applied, a reversed input waits as a whole and replays nothing;
    the same input unpaced is applied event by event and replays."""
    reversed_input = [(ts, ts) for ts in range(60, 0, -1)]
    graph = graphs.running_sum()
    unpaced = fs.run(graph, {"numbers": reversed_input}, reorder_latency=100)
    paced = fs.run(graph, {"numbers": reversed_input}, reorder_latency=100, rate=1e9)
    assert paced.outputs == unpaced.outputs == reference_run(graph, {"numbers": reversed_input})
    assert unpaced.metrics["tombstones"] > 0
    assert paced.metrics["tombstones"] == 0


def test_a_run_that_keeps_up_takes_as_long_as_its_input_and_counts_latency_from_arrival():
    events = [(ts * 10, ts) for ts in range(20)]
    started = time.perf_counter()
    result = fs.run(graphs.running_sum(), {"numbers": events}, reorder_latency=0, rate=200)
    assert time.perf_counter() - started >= 19 / 200
    assert len(result.latencies_ms) == 20
    # With no reorder latency, each output waits for the next event, due 5 ms after its own, or for the end.
    assert all(4.0 <= latency < 1000 for latency in result.latencies_ms[:-1])
