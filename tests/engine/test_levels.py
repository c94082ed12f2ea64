"""Several reorder latencies: the outputs of the first, and the corrections of each later one.

The invariant (hypothesis, both modes): for every level k, the outputs
replayed with the corrections of the levels up to k are, as a multiset,
the outputs of a run with the single latency Dk on the same arrival order;
the last level's are the in-order run over every event within Dn.
"""
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flamespark as fs
from flamespark.core.codec import pack
from flamespark.engines.local import LocalRun
from flamespark.runtime.options import RunOptions
from tests import graphs
from tests.engine.test_exactness import NUMBER_GRAPHS
from tests.engine.test_joins import HOWS, key, reference_join
from tests.engine.test_paced import drawn_turns, turns
from tests.engine.test_windows import KINDS, payload, reference_windows, window_graph, window_params
from tests.oracles.changelog_checks import check_changelog
from tests.oracles.reference import reference_run
from tests.strategies import disordered, in_order_events

MODES = ["optimistic", "buffered"]


@st.composite
def levels_case(draw, payloads=st.integers(0, 20), make=lambda event: event):
    """Increasing latencies (two or three), events in order and an arrival order whose disorder goes past the
    first latency and, for some events, past the last."""
    first = draw(st.integers(0, 6))
    latencies = [first]
    for _ in range(draw(st.integers(1, 2))):
        latencies.append(latencies[-1] + draw(st.integers(1, 10)))
    events = [make(event) for event in draw(in_order_events(payloads, max_size=25))]
    arrival = draw(disordered(events, latencies[-1] + draw(st.integers(0, 20))))
    return tuple(latencies), events, arrival


def replayed(outputs: list, records: list, level: int) -> Counter:
    """The outputs with the corrections of the levels up to `level`, as a multiset of encoded payloads; fails if
    a `-` removes what is not there."""
    live = Counter(map(pack, outputs))
    for record in records:
        if record["level"] > level:
            continue
        key = pack(record["payload"])
        if record["op"] == "+":
            live[key] += 1
        else:
            assert record["op"] == "-", record
            assert live[key] > 0, f"a correction removes what is not there: {record}"
            live[key] -= 1
    return +live


def level_of(arrival: list, position: int, latencies: tuple) -> int:
    """The first level at which the event at `position` is on time: not more than Dk behind the newest before."""
    ts = arrival[position][0]
    newest = max((earlier for earlier, _ in arrival[:position]), default=ts)
    return next((k for k, latency in enumerate(latencies, 1) if ts >= newest - latency), len(latencies) + 1)


def check_levels(graph, inputs: dict, latencies: tuple, mode: str, reference=None):
    """The invariant, and what each correction record says of itself. `inputs` maps sources to their events in
    arrival order; `reference(events)` gives each sink's outputs of an in-order run over `events` (the same
    mapping, without the late events), by default the in-order interpreter's."""
    result = fs.run(graph, inputs, mode=mode, reorder_latency=latencies)
    assert set(result.corrections) == set(result.outputs)
    for k, latency in enumerate(latencies, 1):
        single = fs.run(graph, inputs, mode=mode, reorder_latency=latency)
        for sink, outputs in result.outputs.items():
            assert replayed(outputs, result.corrections[sink], k) == Counter(map(pack, single.outputs[sink])), k
        if k == 1:
            assert result.outputs == single.outputs
        if k == len(latencies):
            assert result.late == single.late
    in_order = (reference or (lambda events: reference_run(graph, events)))(kept_events(inputs, result.late))
    for sink, outputs in result.outputs.items():
        assert replayed(outputs, result.corrections[sink], len(latencies)) == Counter(map(pack, in_order[sink]))
        check_causes(result.corrections[sink], inputs, latencies)
        by_level = {}
        for record in result.corrections[sink]:
            by_level.setdefault(record["level"], []).append(record["ts"])
        for times in by_level.values():  # each level releases in event-time order
            assert times == sorted(times)
    return result


def kept_events(inputs: dict, late: list) -> dict:
    """`inputs` (each source's events in arrival order) without the dead letters `late`."""
    dropped = Counter((letter["source"], letter["ts"], pack(letter["payload"])) for letter in late)
    return {source: [event for event in arrival if not _take(dropped, source, event)]
            for source, arrival in inputs.items()}


def check_causes(records: list, inputs: dict, latencies: tuple):
    """Each correction of `records` is of a later level, and its cause is an event of `inputs` of that level, at
    or before the correction's time."""
    for record in records:
        assert 2 <= record["level"] <= len(latencies), record
        cause = record["cause"]
        arrival = inputs[cause["source"]]
        assert arrival[cause["position"]][0] == cause["ts"] <= record["ts"], record
        assert level_of(arrival, cause["position"], latencies) == record["level"], record


def _take(counter: Counter, source: str, event) -> bool:
    key = (source, event[0], pack(event[1]))
    if counter[key] > 0:
        counter[key] -= 1
        return True
    return False


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("build", NUMBER_GRAPHS, ids=lambda b: b.__name__)
@settings(max_examples=60, deadline=None)
@given(case=levels_case())
def test_each_level_corrects_the_outputs_into_a_run_at_its_latency(build, mode, case):
    latencies, _, arrival = case
    check_levels(build(), {"numbers": arrival}, latencies, mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=40, deadline=None)
@given(case=levels_case(make=payload), data=st.data())
def test_window_results_are_corrected_level_by_level(kind, mode, case, data):
    latencies, _, arrival = case
    params = data.draw(window_params(kind))
    check_levels(window_graph(kind, params, "count"), {"events": arrival}, latencies, mode,
                 lambda kept: {"results": reference_windows(kept["events"], kind, params, "count")})


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", HOWS)
@settings(max_examples=40, deadline=None)
@given(left=levels_case(make=lambda event: side_payload(event, "l")), data=st.data())
def test_join_results_are_corrected_level_by_level(how, mode, left, data):
    latencies, _, lefts = left
    rights = data.draw(disordered([side_payload(event, "r") for event in data.draw(in_order_events(
        st.integers(0, 20), max_size=20))], latencies[-1] + data.draw(st.integers(0, 20))))
    lower = data.draw(st.integers(-6, 6))
    upper = data.draw(st.integers(lower, 8))
    g = fs.Graph("join")
    g.source("left").interval_join(g.source("right"), key, within=(lower, upper), how=how, name="j").sink("out")
    check_levels(g, {"left": lefts, "right": rights}, latencies, mode,
                 lambda kept: {"out": [payload for _, payload in reference_join(kept["left"], kept["right"], lower,
                                                                                 upper, how)]})


def side_payload(event, side):
    ts, value = event
    return ts, {"t": ts, "k": value % 3, "v": value, "side": side}


@settings(max_examples=40, deadline=None)
@given(case=levels_case())
def test_the_changelog_of_the_first_level_is_kept_beside_the_corrections(case):
    latencies, _, arrival = case
    graph = graphs.chained_stateful()
    result = fs.run(graph, {"numbers": arrival}, reorder_latency=latencies, changes=True)
    check_changelog(result, {"numbers": arrival})
    assert result.outputs == fs.run(graph, {"numbers": arrival}, reorder_latency=latencies[0]).outputs


def test_a_corrected_window_retracts_its_old_value_and_names_the_late_event():
    g = fs.Graph("counts")
    g.source("clicks").tumbling_window(lambda click: click, size=100, name="w").count().sink("counts")
    arrival = [(10, "a"), (150, "a"), (320, "a"), (60, "a"), (700, "a")]  # 60 is 260 behind 320
    result = fs.run(g, {"clicks": arrival}, reorder_latency=(100, 1000))
    assert result.outputs["counts"] == [{"key": "a", "start": start, "end": start + 100, "value": 1}
                                        for start in (0, 100, 300, 700)]
    assert result.corrections["counts"] == [
        {"op": "-", "ts": 99, "payload": {"key": "a", "start": 0, "end": 100, "value": 1}, "level": 2,
         "cause": {"source": "clicks", "ts": 60, "position": 3}},
        {"op": "+", "ts": 99, "payload": {"key": "a", "start": 0, "end": 100, "value": 2}, "level": 2,
         "cause": {"source": "clicks", "ts": 60, "position": 3}},
    ]
    assert result.late == []
    assert [level["events"] for level in result.metrics["levels"]] == [4, 1]
    assert [level["corrections"] for level in result.metrics["levels"]] == [0, 2]


def test_a_late_event_that_bridges_two_sessions_retracts_both():
    g = fs.Graph("bridge")
    g.source("visits").session_window(lambda visit: "u", gap=10, name="s").count().sink("sessions")
    result = fs.run(g, {"visits": [(0, "a"), (18, "b"), (40, "x"), (9, "c"), (80, "y")]}, reorder_latency=(5, 50))
    sessions = [(p["start"], p["end"], p["value"]) for p in result.outputs["sessions"]]
    assert sessions == [(0, 10, 1), (18, 28, 1), (40, 50, 1), (80, 90, 1)]
    corrections = [(c["op"], c["payload"]["start"], c["payload"]["end"], c["payload"]["value"], c["cause"]["ts"])
                   for c in result.corrections["sessions"]]
    assert sorted(corrections) == [("+", 0, 28, 3, 9), ("-", 0, 10, 1, 9), ("-", 18, 28, 1, 9)]


def test_a_correction_leaves_once_its_levels_punctuation_passes_it():
    run = LocalRun(graphs.running_sum(), RunOptions.of(reorder_latency=(10, 100)))
    released, made = [], []
    for ts in (0, 50, 20, 120, 121, 150, 151):  # 20 is 30 behind 50: on time at 100 only
        run.apply([("numbers", ts, 3, 0.0)])  # every value of one key: a running total of threes
        run.punctuate()
        made += run.corrections.take()
        released.append([(c["op"], c["ts"], c["payload"]) for sink, c, _ in made if sink == "sums"])
    assert released[:4] == [[]] * 4  # level 2's punctuation is at most 120 - 100 - 1 = 19
    assert released[4] == [("+", 20, 6)]  # 121: the output of 20 is final at level 2
    assert released[5] == released[4]
    assert released[6] == [("+", 20, 6), ("-", 50, 6), ("+", 50, 9)]  # 151: and that of 50
    assert run.outputs["sums"] == [3, 6, 9, 12]  # level 1 has released up to 151 - 10 - 1


def test_an_event_later_than_the_last_latency_follows_the_late_policy():
    graph = graphs.running_sum()
    arrival = [(100, 3), (60, 6), (10, 12), (200, 24)]  # one key; 60 is 40 behind 100, 10 is 90 behind
    dropped = fs.run(graph, {"numbers": arrival}, reorder_latency=(20, 50))
    assert dropped.outputs == {"sums": [3, 27]}
    assert [(letter["ts"], letter["punctuation"]) for letter in dropped.late] == [(10, 49)]
    assert [(c["op"], c["ts"], c["payload"]) for c in dropped.corrections["sums"]] == [
        ("+", 60, 6), ("-", 100, 3), ("+", 100, 9), ("-", 200, 27), ("+", 200, 33)]
    adjusted = fs.run(graph, {"numbers": arrival}, reorder_latency=(20, 50), late="adjust")
    assert adjusted.late == [] and adjusted.metrics["late_adjusted"] == 1
    assert replayed(adjusted.outputs["sums"], adjusted.corrections["sums"], 2) == Counter(
        map(pack, fs.run(graph, {"numbers": arrival}, reorder_latency=50, late="adjust").outputs["sums"]))
    with pytest.raises(fs.LateEventError, match=r"event ts=10 of source 'numbers' \(position 2"):
        fs.run(graph, {"numbers": arrival}, reorder_latency=(20, 50), late="fail")


def test_one_latency_in_a_sequence_is_a_run_without_levels():
    result = fs.run(graphs.running_sum(), {"numbers": [(5, 1), (1, 2)]}, reorder_latency=[10])
    assert result.outputs == {"sums": [2, 1]} and result.corrections == {} and result.metrics["levels"] is None


def test_the_spark_engine_refuses_an_idle_timeout_with_levels_before_it_starts():
    with pytest.raises(fs.OptionError, match="idle_timeout takes one reorder latency"):
        fs.run(graphs.running_sum(), {"numbers": [(1, 1)]}, engine="spark", reorder_latency=(10, 20), idle_timeout=1.0)


def test_the_drawn_cases_make_corrections_of_every_level_and_late_events():
    seen = Counter()

    @settings(max_examples=150, deadline=None, derandomize=True, database=None)
    @given(case=levels_case())
    def draw(case):
        latencies, _, arrival = case
        result = fs.run(graphs.running_sum(), {"numbers": arrival}, reorder_latency=latencies)
        seen.update(record["level"] for record in result.corrections["sums"])
        seen["late"] += len(result.late)

    draw()
    assert seen[2] > 50 and seen[3] > 20 and seen["late"] > 10, seen


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=60, deadline=None)
@given(case=levels_case(), data=st.data())
def test_turns_behind_release_the_same_outputs_and_corrections(mode, case, data):
    """A paced run's turns, behind or not, apply what the first level's punctuation made final and hold back the
    rest: the later levels take what is final for the first, and the outputs and corrections are as unpaced."""
    latencies, _, arrival = case
    graph = graphs.chained_stateful()
    paced = turns(LocalRun(graph, RunOptions.of(mode=mode, reorder_latency=latencies)),
                  *drawn_turns(data, arrival, 5))
    unpaced = fs.run(graph, {"numbers": arrival}, mode=mode, reorder_latency=latencies)
    assert paced.outputs == unpaced.outputs and paced.late == unpaced.late
    for sink in unpaced.corrections:
        without_cause = lambda result: Counter((c["op"], c["ts"], pack(c["payload"]), c["level"])  # noqa: E731
                                               for c in result.corrections[sink])
        assert without_cause(paced) == without_cause(unpaced)
