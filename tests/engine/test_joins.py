"""Interval joins: released results equal those of a plain in-order program, under any disorder within D.

Payloads carry their own event time (`t`), so the reference (nested loops
over all events) can say at which time each result is due; results are
compared as multisets per event time, released in event-time order.
"""
from collections import Counter
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flamespark as fs
from flamespark.engines.local import LocalRun
from flamespark.runtime.options import RunOptions
from tests.oracles.changelog_checks import check_changes
from tests.strategies import batch_sizes, disordered, in_order_events
from tests.oracles.reference import sorted_events
from tests.engine.test_windows import assert_same_results, reference_windows, window_time

MODES = ["optimistic", "buffered"]
HOWS = ["inner", "left", "left_anti"]


def key(payload):
    return payload["k"]


def reference_join(lefts, rights, lower, upper, how, right_key=key):
    """Every result of the join as `(event time, payload)`, by nested loops over the `(ts, payload)` events."""
    results = []
    for lt, left in lefts:
        partners = [(rt, right) for rt, right in rights if key(left) == right_key(right) and lower <= rt - lt <= upper]
        if how != "left_anti":
            results += [(max(lt, rt), {"left": left, "right": right}) for rt, right in partners]
        if not partners and how != "inner":
            results.append((lt + max(upper, 0), {"left": left, "right": None} if how == "left" else left))
    return results


def result_time(upper):
    """The event time of a released result, read from the payloads it holds."""
    def time_of(result):
        if "left" not in result:  # left_anti: the left payload itself
            return result["t"] + max(upper, 0)
        if result["right"] is None:
            return result["left"]["t"] + max(upper, 0)
        return max(result["left"]["t"], result["right"]["t"])

    return time_of


def side_events(draw, side):
    events = draw(in_order_events(st.integers(0, 20), max_size=20))
    return [(ts, {"t": ts, "k": value % 3, "v": value, "side": side}) for ts, value in events]


@st.composite
def join_case(draw):
    latency = draw(st.integers(0, 12))
    lefts, rights = side_events(draw, "l"), side_events(draw, "r")
    lower = draw(st.integers(-6, 6))
    upper = draw(st.integers(lower, 8))
    arrival = {"left": draw(disordered(lefts, latency)), "right": draw(disordered(rights, latency))}
    return latency, lefts, rights, arrival, lower, upper, draw(batch_sizes())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", HOWS)
@settings(max_examples=150, deadline=None)
@given(case=join_case())
def test_joins_match_the_in_order_program(how, mode, case):
    latency, lefts, rights, arrival, lower, upper, every = case
    g = fs.Graph("join")
    g.source("left").interval_join(g.source("right"), key, within=(lower, upper), how=how, name="j").sink("out")
    result = fs.run(g, arrival, mode=mode, reorder_latency=latency, batch_size=every,
                    changes=mode == "optimistic")
    expected = [payload for _, payload in reference_join(lefts, rights, lower, upper, how)]
    assert_same_results(result.outputs["out"], expected, result_time(upper))
    assert result.late == []
    if mode == "optimistic":
        check_changes(result, arrival)


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=100, deadline=None)
@given(case=join_case())
def test_a_self_join_with_a_right_key_matches_the_in_order_program(mode, case):
    """Both sides from one source, keyed apart: an event pairs with the events of the next key around it."""
    latency, lefts, _, arrival, lower, upper, every = case
    g = fs.Graph("self_join")
    events = g.source("left")
    events.interval_join(events, key, right_key=lambda p: (p["k"] - 1) % 3, within=(lower, upper), how="left",
                         name="j").sink("out")
    result = fs.run(g, {"left": arrival["left"]}, mode=mode, reorder_latency=latency, batch_size=every)
    expected = reference_join(lefts, lefts, lower, upper, "left", right_key=lambda p: (p["k"] - 1) % 3)
    assert_same_results(result.outputs["out"], [payload for _, payload in expected], result_time(upper))


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=100, deadline=None)
@given(case=join_case(), size=st.integers(1, 8))
def test_pairs_counted_in_windows_match_the_in_order_program(mode, case, size):
    """A join, then a tumbling count of its pairs per key (the click-through rate's numerator)."""
    latency, lefts, rights, arrival, lower, upper, every = case
    g = fs.Graph("join_then_count")
    pairs = g.source("left").interval_join(g.source("right"), key, within=(lower, upper), name="j")
    pairs.tumbling_window(lambda pair: pair["left"]["k"], size, name="w").count().sink("counts")
    result = fs.run(g, arrival, mode=mode, reorder_latency=latency, batch_size=every)
    joined = [(ts, {"t": ts, "k": pair["left"]["k"]}) for ts, pair in reference_join(lefts, rights, lower, upper,
                                                                                       "inner")]
    expected = reference_windows(joined, "tumbling", {"size": size}, "count")
    assert_same_results(result.outputs["counts"], expected, window_time)


def counted(count, payload):
    """The running count per parity of `v`: a re-run retracts and remakes what it sent."""
    count = (count or 0) + 1
    return count, [{"t": payload["t"], "k": count % 3, "v": payload["v"], "n": count}]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", HOWS)
@settings(max_examples=100, deadline=None)
@given(case=join_case())
def test_joins_fed_tombstones_match_the_in_order_program(how, mode, case):
    """The left side comes from a running count, keyed by the count: a late event's re-run retracts later left
    items and sends them again under other keys (and a filter drops some), so tombstones unmake pairs and
    unmatched results."""
    latency, lefts, rights, arrival, lower, upper, every = case
    g = fs.Graph("join_fed_tombstones")
    numbered = g.source("left").stateful(key=lambda p: p["v"] % 2, update=counted, name="counted")
    numbered.filter(lambda p: p["n"] % 4 != 0).interval_join(g.source("right"), key, within=(lower, upper),
                                                             how=how, name="j").sink("out")
    result = fs.run(g, arrival, mode=mode, reorder_latency=latency, batch_size=every)
    counts = Counter()
    counted_lefts = []
    for _, ts, payload in sorted_events({"left": lefts}):
        parity = payload["v"] % 2
        counts[parity] += 1
        if counts[parity] % 4:
            counted_lefts.append((ts, {"t": ts, "k": counts[parity] % 3, "v": payload["v"], "n": counts[parity]}))
    expected = reference_join(counted_lefts, rights, lower, upper, how)
    assert_same_results(result.outputs["out"], [payload for _, payload in expected], result_time(upper))


def test_an_impression_clicked_late_is_retracted_from_the_no_click_results():
    g = fs.Graph("no_click")
    g.source("shown").interval_join(g.source("clicked"), key, within=(0, 60), how="left_anti", name="j").sink("out")
    shown = [(0, {"t": 0, "k": 1}), (100, {"t": 100, "k": 2})]
    clicked = [(200, {"t": 200, "k": 0}), (30, {"t": 30, "k": 1})]
    result = fs.run(g, {"shown": shown, "clicked": clicked}, reorder_latency=200, changes=True, batch_size=1)
    assert result.outputs["out"] == [{"t": 100, "k": 2}]
    assert [(c["op"], c["ts"], c["payload"]["t"]) for c in result.changes["out"]] == [
        ("+", 60, 0), ("+", 160, 100), ("-", 60, 0)]


def windows_held(state) -> int:
    return sum(len(bucket.sides[0].items) + len(bucket.sides[1].items) for bucket in state._buckets.values())


@pytest.mark.slow
def test_the_local_engine_forgets_join_sides_past_their_interval():
    g = fs.Graph("long_join")
    g.source("left").interval_join(g.source("right"), key, within=(-20, 30), how="left", name="j").sink("out")
    local = LocalRun(g, RunOptions.of(reorder_latency=50))
    held = []

    def events(side):
        for ts in range(20_000):
            yield ts, {"t": ts, "k": ts % 5}
            if side == "left" and ts % 2_000 == 1_999:
                held.append(windows_held(local.states["j"]))

    result = local.run({"left": events("left"), "right": events("right")})
    # Each left item meets the right items of its key from 20 ms before it to 30 ms after (11, but at the ends).
    assert len(result.outputs["out"]) == sum(len(range(max(0, t - 20), min(20_000, t + 31), 5)) for t in range(20_000))
    assert max(held) <= 2 * (1024 + 100), held  # two sides, a sweep every 1024 items, the interval and D
    assert held[-1] <= 2 * held[1] + 20, held


@pytest.mark.parametrize("within, how, message", [
    ((5, 1), "inner", r"interval_join 'j' within=\(lower, upper\) needs lower <= upper, got \(5, 1\)"),
    (None, "inner", r"interval_join 'j' needs within=\(lower, upper\)"),
    ((0, 1.5), "inner", "interval_join 'j' upper bound must be a whole number of milliseconds"),
    ((0, 10), "outer", "interval_join 'j' how must be one of 'inner', 'left', 'left_anti', got 'outer'"),
])
def test_bad_join_arguments_raise_graph_errors_naming_the_operator(within, how, message):
    g = fs.Graph("bad")
    with pytest.raises(fs.GraphError, match=message):
        g.source("a").interval_join(g.source("b"), key, within=within, how=how, name="j")


def test_a_join_needs_a_stream_of_its_graph_and_callable_keys():
    g, other = fs.Graph("g"), fs.Graph("other")
    a = g.source("a")
    with pytest.raises(fs.GraphError, match="interval_join takes a stream of the same graph"):
        a.interval_join(other.source("b"), key, within=(0, 1))
    with pytest.raises(fs.GraphError, match="right key function of interval_join must be callable or None"):
        a.interval_join(g.source("b"), key, right_key=3, within=(0, 1))


def test_join_bounds_may_be_timedeltas():
    g = fs.Graph("minutes")
    g.source("a").interval_join(g.source("b"), key, within=(timedelta(0), timedelta(minutes=1))).sink("out")
    released = fs.run(g, {"a": [(0, {"k": 1})], "b": [(60_000, {"k": 1}), (60_001, {"k": 1})]}).outputs["out"]
    assert released == [{"left": {"k": 1}, "right": {"k": 1}}]


@pytest.mark.parametrize("side, role", [("left", "key"), ("right", "right key")])
def test_a_raising_key_names_the_join_and_the_event(side, role):
    g = fs.Graph("raising")
    g.source("left").interval_join(g.source("right"), key, right_key=lambda p: p["k"], within=(0, 5),
                                   name="j").sink("out")
    inputs = {"left": [(1, {"k": 1})], "right": [(2, {"k": 1})]}
    inputs[side] = [(3, {"other": 1})]
    with pytest.raises(fs.UserFunctionError, match=rf"{role} function of interval_join operator 'j' raised "
                                                  rf"KeyError.*event ts=3 of source '{side}'"):
        fs.run(g, inputs)


def test_joins_are_drawn_with_both_inputs():
    g = fs.Graph("drawn")
    g.source("a").interval_join(g.source("b"), key, within=(0, 5), how="left", name="j").sink("out")
    drawn = g.to_networkx()
    assert {("a", "j"), ("b", "j")} <= set(drawn.edges)
    assert drawn.nodes["j"]["detail"] == "left within [0, 5] ms"
