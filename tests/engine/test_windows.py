"""Event-time windows: released results equal those of a plain in-order program, under any disorder within D.

The reference below is written apart from the engine: it sorts the events
by time (ties as the ordering model breaks them) and folds each window's
payloads with plain loops. Results of equal event time come in an order of
the engine's own (a hash of key and window), so outputs are compared as
multisets per event time, and their event times must not decrease.
"""
import math
from collections import Counter, defaultdict
from datetime import timedelta
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flamespark as fs
from flamespark.core.codec import pack
from flamespark.engines.local import LocalRun
from flamespark.runtime.options import RunOptions
from tests.oracles.changelog_checks import check_changes
from tests.oracles.reference import sorted_events
from tests.strategies import batch_sizes, disordered, in_order_events

MODES = ["optimistic", "buffered"]


# --- the reference: plain Python over the events in event-time order ----------------------------

def exact_sum(values):
    """The correctly rounded sum, as FlameSpark's sums are: ints as ints, floats rounded once."""
    values = list(values)
    return math.fsum(values) if any(type(value) is float for value in values) else sum(values)


def exact_mean(values):
    """The correctly rounded mean, as FlameSpark's means are: the exact sum over the count, rounded once."""
    values = list(values)
    return float(sum(map(Fraction, values), Fraction(0)) / len(values))


def fold_sum(values):
    total = 0
    for value in values:  # a fold rounds at every step, so its value depends on the order
        total += value
    return total


REFERENCE_AGGREGATES = {
    "count": len,
    "sum": lambda payloads: exact_sum(p["f"] for p in payloads),
    "min": lambda payloads: min(p["v"] for p in payloads),
    "max": lambda payloads: max(p["v"] for p in payloads),
    "mean": lambda payloads: exact_mean(p["f"] for p in payloads),
    "collect": lambda payloads: [p["v"] for p in payloads],
    "concat": lambda payloads: "".join(f"{p['v']}," for p in payloads).upper(),
    "in_place": lambda payloads: [p["v"] for p in payloads][-3:],
}


def _append_in_place(acc, payload):
    acc.append(payload["v"])  # changes the accumulator in place, as natural Python does
    return acc


def aggregated(window, name):
    """The engine's aggregate `name` of `window` (a flamespark.windows.Window)."""
    if name == "count":
        return window.count()
    if name in ("sum", "mean"):
        return getattr(window, name)(lambda p: p["f"])
    if name in ("min", "max", "collect"):
        return getattr(window, name)(lambda p: p["v"])
    if name == "concat":  # order-sensitive, no merge, a finish
        return window.aggregate(lambda text, p: text + f"{p['v']},", zero="", finish=str.upper)
    assert name == "in_place"  # a list zero changed in place, a finish that keeps part of it
    return window.aggregate(_append_in_place, zero=[], finish=lambda acc: acc[-3:])


def fixed_starts(ts, size, slide):
    start = ts - ts % slide
    while start > ts - size:
        yield start
        start -= slide


def reference_windows(events, kind, params, aggregate, key=lambda p: p["k"], ordered=False):
    """`{"key", "start", "end", "value"}` of every window, from the `(ts, payload)` events in event-time order
    (sorted here, unless `ordered`)."""
    if ordered:
        ordered = [payload for _, payload in events]
    else:
        ordered = [payload for _, _, payload in sorted_events({"events": events})]
    members = defaultdict(list)  # (key, start, end) -> payloads in order
    if kind == "session":
        gap = params["gap"]
        by_key = defaultdict(list)
        for payload in ordered:
            by_key[key(payload)].append(payload)
        for k, payloads in by_key.items():
            session = [payloads[0]]
            for payload in payloads[1:]:
                if payload["t"] - session[-1]["t"] >= gap:
                    members[(k, session[0]["t"], session[-1]["t"] + gap)] = session
                    session = []
                session.append(payload)
            members[(k, session[0]["t"], session[-1]["t"] + gap)] = session
    else:
        size, slide = params["size"], params.get("slide", params["size"])
        for payload in ordered:
            for start in fixed_starts(payload["t"], size, slide):
                members[(key(payload), start, start + size)].append(payload)
    fold = REFERENCE_AGGREGATES[aggregate]
    return [{"key": k, "start": s, "end": e, "value": fold(payloads)} for (k, s, e), payloads in members.items()]


def assert_same_results(released, expected, time_of):
    """Equal as multisets per event time, and released in event-time order."""
    times = [time_of(payload) for payload in released]
    assert times == sorted(times), "results released out of event-time order"
    assert Counter((time_of(p), pack(p)) for p in released) == Counter((time_of(p), pack(p)) for p in expected)


def window_time(result):
    return result["end"] - 1


# --- cases ---------------------------------------------------------------------------------------

def payload(ts_value):
    ts, value = ts_value
    return ts, {"t": ts, "k": value % 3, "v": value, "f": value / 7}


@st.composite
def events_case(draw, max_size=30):
    latency = draw(st.integers(0, 12))
    events = [payload(e) for e in draw(in_order_events(st.integers(0, 20), max_size=max_size))]
    return latency, events, draw(disordered(events, latency)), draw(batch_sizes())


@st.composite
def window_params(draw, kind):
    if kind == "tumbling":
        return {"size": draw(st.integers(1, 10))}
    if kind == "hopping":
        return {"size": draw(st.integers(1, 10)), "slide": draw(st.integers(1, 12))}
    return {"gap": draw(st.integers(1, 8))}


def window_of(stream, kind, params, key=lambda p: p["k"], name="w"):
    if kind == "tumbling":
        return stream.tumbling_window(key, params["size"], name=name)
    if kind == "hopping":
        return stream.hopping_window(key, params["size"], params["slide"], name=name)
    return stream.session_window(key, params["gap"], name=name)


def window_graph(kind, params, aggregate):
    g = fs.Graph(f"{kind}_{aggregate}")
    aggregated(window_of(g.source("events"), kind, params), aggregate).sink("results")
    return g


KINDS = ["tumbling", "hopping", "session"]
AGGREGATES = list(REFERENCE_AGGREGATES)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("aggregate", AGGREGATES)
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_windows_match_the_in_order_program(kind, aggregate, mode, data):
    latency, events, arrival, every = data.draw(events_case())
    params = data.draw(window_params(kind))
    graph = window_graph(kind, params, aggregate)
    result = fs.run(graph, {"events": arrival}, mode=mode, reorder_latency=latency, batch_size=every,
                    changes=mode == "optimistic")
    assert_same_results(result.outputs["results"], reference_windows(events, kind, params, aggregate), window_time)
    assert result.late == []
    if mode == "optimistic":
        check_changes(result, {"events": arrival})


def numbered(count, value):
    """The running count per parity: its re-runs retract and remake what it sent."""
    count = (count or 0) + 1
    return count, [{"k": count % 2, "v": value, "n": count}]


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_windows_fed_tombstones_match_the_in_order_program(kind, mode, data):
    """Tombstones from upstream remove events from windows, which changes their values and splits sessions:
    the windows are keyed by the parity of a running count, so a late event's re-run moves later events from
    one key to the other, and a filter drops some. Few keys, long disorders: late events bridge sessions."""
    latency = data.draw(st.integers(5, 20))
    raw = data.draw(in_order_events(st.integers(0, 20), max_size=40, max_step=6))
    arrival = data.draw(disordered(raw, latency))
    params = data.draw(window_params(kind)) if kind != "session" else {"gap": data.draw(st.integers(2, 8))}
    g = fs.Graph("fed_tombstones")
    counted = g.source("numbers").stateful(key=lambda v: v % 2, update=numbered, name="numbered")
    window = window_of(counted.filter(lambda p: p["n"] % 3 != 0), kind, params)
    window.collect(lambda p: [p["v"], p["n"]]).sink("results")
    result = fs.run(g, {"numbers": arrival}, mode=mode, reorder_latency=latency, changes=mode == "optimistic")
    # In order, a payload's count is its place among its key's events; windows then follow from the times.
    counts = Counter()
    events = []
    for _, ts, value in sorted_events({"numbers": raw}):
        counts[value % 2] += 1
        if counts[value % 2] % 3:
            events.append((ts, {"t": ts, "k": counts[value % 2] % 2, "v": [value, counts[value % 2]]}))
    expected = reference_windows(events, kind, params, "collect", ordered=True)
    assert_same_results(result.outputs["results"], expected, window_time)
    if mode == "optimistic":
        check_changes(result, {"numbers": arrival})


def test_a_late_event_bridging_two_sessions_merges_them_and_the_changelog_shows_it():
    g = fs.Graph("bridge")
    g.source("visits").session_window(lambda v: "u", gap=10, name="s").count().sink("sessions")
    result = fs.run(g, {"visits": [(0, "a"), (18, "b"), (9, "c")]}, reorder_latency=20, changes=True, batch_size=1)
    assert result.outputs["sessions"] == [{"key": "u", "start": 0, "end": 28, "value": 3}]
    retracted = [(c["payload"]["start"], c["payload"]["end"]) for c in result.changes["sessions"] if c["op"] == "-"]
    assert sorted(retracted) == [(0, 10), (18, 28)]
    assert {c["cause"]["ts"] for c in result.changes["sessions"] if c["op"] == "-"} == {9}


def test_early_results_grow_with_the_window_and_the_barrier_releases_one_per_window():
    g = fs.Graph("early")
    g.source("clicks").tumbling_window(lambda c: c, size=10).count().sink("counts")
    result = fs.run(g, {"clicks": [(1, "x"), (2, "x"), (3, "x"), (12, "x")]}, reorder_latency=0, changes=True,
                    batch_size=1)
    assert [r["value"] for r in result.outputs["counts"]] == [3, 1]
    ops = [(c["op"], c["payload"]["value"]) for c in result.changes["counts"] if c["payload"]["start"] == 0]
    assert ops == [("+", 1), ("+", 2), ("-", 1), ("+", 3), ("-", 2)]
    assert result.metrics["released"] == 2


@st.composite
def chained_case(draw):
    latency, events, arrival, every = draw(events_case(max_size=40))
    return latency, events, arrival, every, draw(st.integers(1, 5)), draw(st.integers(1, 4))


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=150, deadline=None)
@given(case=chained_case())
def test_a_window_over_window_results_matches_the_in_order_program(mode, case):
    """Per key, counts over tumbling windows, then the largest count over hopping windows of those results
    (TinTiN's chained aggregates)."""
    latency, events, arrival, every, size, factor = case
    g = fs.Graph("chained")
    counts = g.source("events").tumbling_window(lambda p: p["k"], size, name="counts").count()
    counts.hopping_window(lambda r: r["key"], size * factor * 2, size * factor, name="peaks").max(
        lambda r: r["value"]).sink("peaks")
    result = fs.run(g, {"events": arrival}, mode=mode, reorder_latency=latency, batch_size=every)
    first = reference_windows(events, "tumbling", {"size": size}, "count")
    second_events = [(r["end"] - 1, {"t": r["end"] - 1, "k": r["key"], "v": r["value"]}) for r in first]
    expected = reference_windows(second_events, "hopping", {"size": size * factor * 2, "slide": size * factor},
                                 "max")
    assert_same_results(result.outputs["peaks"], expected, window_time)


@pytest.mark.parametrize("batch_size", [1, 7, 1000])
def test_float_sums_are_correctly_rounded_whatever_the_arrival_order(batch_size):
    values = [1e16, 1.0, -1e16, 1.0] * 5
    events = [(i, {"t": i, "k": 0, "v": 0, "f": value}) for i, value in enumerate(values)]
    g = window_graph("tumbling", {"size": 100}, "sum")
    for arrival in (events, events[::-1]):
        released = fs.run(g, {"events": arrival}, reorder_latency=100, batch_size=batch_size).outputs["results"]
        assert released[0]["value"] == math.fsum(values) == 10.0
    assert fold_sum(values) != fold_sum(values[::-1])  # where a fold in either order would differ


def test_the_drawn_disorders_make_late_events_change_windows():
    """The exactness tests are only as strong as their cases: in a good share, an event that arrives behind a
    later one, in a later batch, changes a window's value (which a fold in arrival order would get wrong). The
    other cases put the disorder within a batch, or have none."""
    late_changes = []

    @settings(max_examples=100, deadline=None, database=None, derandomize=True)
    @given(case=events_case(), params=window_params("tumbling"))
    def draw(case, params):
        latency, _, arrival, every = case
        result = fs.run(window_graph("tumbling", params, "collect"), {"events": arrival}, reorder_latency=latency,
                        batch_size=every, changes=True)
        late = [record for record in result.changes["results"] if record["op"] == "-"
                and any(ts > record["cause"]["ts"] for ts, _ in arrival[: record["cause"]["position"]])]
        late_changes.append(bool(late))

    draw()
    assert sum(late_changes) >= 15, f"{sum(late_changes)} of {len(late_changes)}"


# --- state, errors, drawing ----------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_the_local_engine_forgets_windows_the_punctuation_passed(kind):
    """After a long run in order, an operator holds windows of about a reorder latency (and a sweep's
    spacing), not of the whole stream."""
    graph = window_graph(kind, {"size": 10, "slide": 5, "gap": 3}, "count")
    local = LocalRun(graph, RunOptions.of(reorder_latency=50))
    held = []

    def events():
        for ts in range(30_000):
            yield ts, {"t": ts, "k": ts % 5, "v": ts, "f": 0.0}
            if ts % 3_000 == 2_999:
                held.append(len(local.states["w"]))

    result = local.run({"events": events()})
    assert len(result.outputs["results"]) >= 5 * 3_000  # windows made in all
    assert max(held) <= 5 * (1024 + 50) // 5 + 20, held  # a sweep every 1024 items; at most 2 windows a 10 ms
    assert held[-1] <= 2 * held[1] + 20, held


@pytest.mark.parametrize("build, message", [
    (lambda s: s.tumbling_window(len, 0), "tumbling_window size must be a positive number of milliseconds"),
    (lambda s: s.tumbling_window(len, 1.5, name="t"), "tumbling_window 't' size must be a positive"),
    (lambda s: s.tumbling_window(len, timedelta(microseconds=1500)), "size must be a positive"),
    (lambda s: s.hopping_window(len, 10, -1, name="h"), "hopping_window 'h' slide must be a positive"),
    (lambda s: s.session_window(len, True), "session_window gap must be a positive"),
    (lambda s: s.session_window("len", 5, name="s"), "key function of session_window 's' must be callable"),
    (lambda s: s.tumbling_window(len, 5, name="t").sum(3), "sum value function of tumbling_window 't' must be"),
    (lambda s: s.tumbling_window(len, 5).aggregate(None), "add function of tumbling_window must be callable"),
    (lambda s: s.tumbling_window(len, 5).aggregate(max, finish=1), "finish function of tumbling_window must be"),
    (lambda s: s.tumbling_window(len, 5).aggregate(max, merge="x"), "merge function of tumbling_window must be"),
])
def test_bad_window_arguments_raise_graph_errors_naming_the_operator(build, message):
    g = fs.Graph("bad")
    with pytest.raises(fs.GraphError, match=message):
        build(g.source("words"))


def test_durations_may_be_timedeltas():
    g = fs.Graph("minutes")
    g.source("clicks").tumbling_window(lambda c: c, timedelta(minutes=1)).count().sink("counts")
    released = fs.run(g, {"clicks": [(1, "x"), (60_001, "x")]}).outputs["counts"]
    assert [(r["start"], r["end"]) for r in released] == [(0, 60_000), (60_000, 120_000)]


@pytest.mark.parametrize("aggregate, role", [
    (lambda w: w.sum(lambda p: p["missing"]), "value"),
    (lambda w: w.aggregate(lambda acc, p: acc / 0, zero=1), "add"),
    (lambda w: w.aggregate(lambda acc, p: acc, zero=1, finish=lambda acc: acc.missing), "finish"),
])
def test_a_raising_user_function_names_the_operator_the_event_and_its_line(aggregate, role):
    g = fs.Graph("raising")
    aggregate(g.source("events").tumbling_window(lambda p: 0, 10, name="w")).sink("out")
    with pytest.raises(fs.UserFunctionError, match=rf"{role} function of window operator 'w' raised .* "
                                                  rf"event ts=3 of source 'events'.*test_windows.py:\d+"):
        fs.run(g, {"events": [(3, {"v": 1})]})


def test_a_raising_key_names_the_window_operator():
    g = fs.Graph("raising")
    g.source("events").session_window(lambda p: p["user"], 10, name="s").count().sink("out")
    with pytest.raises(fs.UserFunctionError, match=r"key function of window operator 's' raised KeyError"):
        fs.run(g, {"events": [(3, {"v": 1})]})


def test_two_aggregates_of_one_window_are_two_operators():
    g = fs.Graph("both")
    window = g.source("n").tumbling_window(lambda n: 0, 10, name="w")
    window.count().sink("counts")
    window.sum().sink("sums")
    assert {"w", "w/sum"} <= set(g.nodes)
    outputs = fs.run(g, {"n": [(1, 2), (2, 3)]}).outputs
    assert (outputs["counts"][0]["value"], outputs["sums"][0]["value"]) == (2, 5)


def test_windows_are_drawn_with_their_kind_and_aggregate():
    g = fs.Graph("drawn")
    g.source("n").hopping_window(lambda n: 0, 10, 5, name="w").mean().sink("means")
    assert g.to_networkx().nodes["w"]["detail"] == "hopping 10 ms every 5 ms, mean"
    assert "hopping 10 ms every 5 ms, mean" in g.to_dot()
