"""Paced local runs: events arrive at a rate; what waits is applied in meta order, and behind, only once final
or in time to spare."""
import math
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flamespark as fs
from flamespark.engines.local import LocalRun
from flamespark.runtime.options import RunOptions
from tests import graphs
from tests.oracles.changelog_checks import check_changelog
from tests.oracles.reference import reference_run
from tests.engine.test_exactness import number_case

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
    unpaced = fs.run(graph, {"numbers": reversed_input}, reorder_latency=100, batch_size=1)
    paced = fs.run(graph, {"numbers": reversed_input}, reorder_latency=100, rate=1e9)
    assert paced.outputs == unpaced.outputs == reference_run(graph, {"numbers": reversed_input})
    assert unpaced.metrics["tombstones"] > 0
    assert paced.metrics["tombstones"] == 0


def test_a_run_that_keeps_up_takes_as_long_as_its_input_and_counts_latency_from_arrival():
    events = [(ts * 10, ts) for ts in range(20)]
    started = time.perf_counter()
    result = fs.run(graphs.running_sum(), {"numbers": events}, reorder_latency=0, rate=200)
    elapsed_ms = (time.perf_counter() - started) * 1000
    assert elapsed_ms >= 19 * 5
    assert len(result.latencies_ms) == 20
    # With no reorder latency, each output waits for the next event, due 5 ms after its own, or for the end.
    assert all(latency >= 4.0 for latency in result.latencies_ms[:-1])
    # Event i arrived (became due) 5i ms into the run, and its output left before the run ended: counted from
    # the run's start instead, the later latencies would not fit.
    assert all(latency + 5 * i <= elapsed_ms for i, latency in enumerate(result.latencies_ms))


def drawn_turns(data, arrival: list, largest: int):
    """The events of `arrival` cut into turns of 1 to `largest` events, and whether each turn is behind."""
    sizes = data.draw(st.lists(st.integers(1, largest), min_size=len(arrival), max_size=len(arrival)))
    groups, at = [], 0
    for size in sizes:
        if at < len(arrival):
            groups.append(arrival[at:at + size])
            at += size
    return groups, data.draw(st.lists(st.booleans(), min_size=len(groups), max_size=len(groups)))


def turns(run: LocalRun, groups: list, behind: list):
    """Hand `run` its events in `groups`, one turn each (behind or not), punctuating after each, then end."""
    for group, late in zip(groups, behind):
        run.apply([("numbers", ts, payload, 0.0) for ts, payload in group], behind=late)
        run.punctuate()
    run.punctuations.end("numbers")
    run.apply([])
    run.punctuate()
    return run.result(0.0)


def held_back(run: LocalRun) -> list:
    """The event times of what a run behind held back, in meta order."""
    return [meta[0] for batch in run.held_back.values() for meta in batch.metas]


def test_an_engine_behind_applies_only_what_the_punctuation_made_final():
    graph = graphs.running_sum()
    run = LocalRun(graph, RunOptions.of(reorder_latency=10))
    run.apply([("numbers", ts, ts, 0.0) for ts in (5, 30, 20)], behind=True)
    # The punctuation after admitting them is 30 - 10 - 1 = 19: only 5 is final.
    assert held_back(run) == [20, 30]
    assert run.events == 1
    # 25 comes after 30 but precedes it: applied with the waiting events in meta order, it replays nothing.
    result = turns(run, [[(25, 25)]], [False])
    assert run.events == 4
    assert result.metrics["tombstones"] == 0
    assert result.outputs == reference_run(graph, {"numbers": [(5, 5), (20, 20), (25, 25), (30, 30)]})


def test_what_a_turn_behind_held_back_waits_for_time_to_spare_and_is_then_applied_in_meta_order():
    graph = graphs.running_sum()
    run = LocalRun(graph, RunOptions.of(reorder_latency=10))
    run.apply([("numbers", ts, ts, 0.0) for ts in (5, 30, 20)], behind=True)
    # One more event, but two wait from before: the turn is still behind, and 25 is not final either.
    run._apply_waiting([("numbers", 25, 25, 0.0)])
    assert held_back(run) == [20, 25, 30]
    run._apply_held_back(until=time.perf_counter() - 1.0)  # no time to spare
    assert run.events == 1
    run._apply_held_back(until=math.inf)
    assert held_back(run) == [] and run.events == 4
    result = turns(run, [], [])
    assert result.metrics["tombstones"] == 0
    assert result.outputs == reference_run(graph, {"numbers": [(5, 5), (20, 20), (25, 25), (30, 30)]})


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=60, deadline=None)
@given(case=number_case(), data=st.data())
def test_turns_that_hold_back_what_is_not_final_keep_the_in_order_outputs(mode, case, data):
    latency, events, arrival, _ = case
    groups, behind = drawn_turns(data, arrival, 4)
    graph = graphs.chained_stateful()
    changes = mode == "optimistic"
    run = LocalRun(graph, RunOptions.of(mode=mode, reorder_latency=latency, changes=changes))
    result = turns(run, groups, behind)
    assert result.outputs == reference_run(graph, {"numbers": events})
    if changes:
        check_changelog(result, {"numbers": arrival})


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_the_same_events_are_late_in_turns_as_one_by_one(mode, data):
    """Lateness is a function of the arrival order: events admitted together in a turn are each judged against the
    newest event before them, as an unpaced run judges them."""
    latency = data.draw(st.integers(0, 6))
    arrival = [(ts, ts) for ts in data.draw(st.lists(st.integers(0, 30), max_size=20))]  # any disorder, late events too
    groups, behind = drawn_turns(data, arrival, 5)
    graph = graphs.running_sum()
    unpaced = fs.run(graph, {"numbers": arrival}, mode=mode, reorder_latency=latency)
    paced = turns(LocalRun(graph, RunOptions.of(mode=mode, reorder_latency=latency)), groups, behind)
    assert paced.late == unpaced.late
    assert paced.outputs == unpaced.outputs
    newest = [max(ts for ts, _ in arrival[:i]) if i else None for i in range(len(arrival))]
    assert [letter["ts"] for letter in unpaced.late] == [ts for (ts, _), top in zip(arrival, newest)
                                                        if top is not None and ts < top - latency]
