"""The changelog (`changes=True`) on the local engine: invariants over random disorders, causes, netting."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flamespark as fs
from flamespark.core.codec import pack
from flamespark.core.errors import InternalError
from flamespark.core.items import Item, Meta
from flamespark.engines.local import LocalRun
from flamespark.runtime.changes import BatchChanges, Cause, Changelog
from flamespark.runtime.options import RunOptions
from tests import graphs
from tests.oracles.changelog_checks import check_changelog
from tests.oracles.reference import reference_run
from tests.engine.test_exactness import MODES, NUMBER_GRAPHS, document_case, number_case


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("build", NUMBER_GRAPHS, ids=lambda b: b.__name__)
@settings(max_examples=100, deadline=None)
@given(case=number_case())
def test_changelog_replays_to_the_released_outputs(build, mode, case):
    latency, events, arrival, every = case
    graph = build()
    result = fs.run(graph, {"numbers": arrival}, mode=mode, reorder_latency=latency, batch_size=every,
                    changes=True)
    assert result.outputs == reference_run(graph, {"numbers": events})
    check_changelog(result, {"numbers": arrival})
    if mode == "buffered":
        assert all(record["op"] == "+" for changes in result.changes.values() for record in changes)


@settings(max_examples=100, deadline=None)
@given(case=document_case())
def test_changelog_of_a_fan_out(case):
    latency, events, arrival, every = case
    graph = graphs.fanout_collector()
    result = fs.run(graph, {"docs": arrival}, reorder_latency=latency, batch_size=every, changes=True)
    assert result.outputs == reference_run(graph, {"docs": events})
    check_changelog(result, {"docs": arrival})


@settings(max_examples=100, deadline=None)
@given(left=number_case(), right=number_case())
def test_changelog_of_two_sources(left, right):
    inputs = {"left": left[2], "right": right[2]}
    result = fs.run(graphs.two_sources(), inputs, reorder_latency=max(left[0], right[0]), changes=True)
    check_changelog(result, inputs, union_sinks=["mixed"])


class _Timeline(LocalRun):
    """A local run that notes, in one sequence, the `+` records made before each release and the outputs it
    releases."""

    def __init__(self, graph, options):
        super().__init__(graph, options)
        self.timeline = []
        self._noted = {sink: 0 for sink in self.changelog.records}
        release = self.barrier.punctuate

        def noted_release(time):
            self._note_changes()
            released = release(time)
            self.timeline.extend(("release", item.sink, item.meta, item.data) for item in released)
            return released

        self.barrier.punctuate = noted_release

    def _note_changes(self):
        for sink, changes in self.changelog.records.items():
            self.timeline.extend(("change", sink, record) for record in changes[self._noted[sink]:]
                                 if record["op"] == "+")
            self._noted[sink] = len(changes)


@settings(max_examples=100, deadline=None)
@given(case=number_case())
def test_every_final_output_is_added_before_it_is_released(case):
    latency, _, arrival, every = case
    run = _Timeline(graphs.running_sum(), RunOptions(reorder_latency=latency, batch_size=every, changes=True))
    run.run({"numbers": arrival})
    last_added = {}
    for index, entry in enumerate(run.timeline):
        if entry[0] == "change":
            last_added.setdefault((entry[2]["ts"], entry[2]["payload"]), []).append(index)
    for index, entry in enumerate(run.timeline):
        if entry[0] == "release":
            added = last_added[(entry[2].ts, fs.core.codec.unpack(entry[3]))]
            assert added and added[0] < index


def test_a_late_event_retracts_what_it_changed_and_is_named():
    arrival = [(3, 3), (6, 6), (9, 9), (12, 12), (0, 15)]
    result = fs.run(graphs.running_sum(), {"numbers": arrival}, reorder_latency=20, changes=True, batch_size=1)
    cause = {"source": "numbers", "ts": 0, "position": 4}
    retracted = [(r["ts"], r["payload"]) for r in result.changes["sums"] if r["op"] == "-"]
    # Key 0 held 3, 9 (at 6), 18 (at 9), 30 (at 12): every one of them moves by 15.
    assert retracted == [(3, 3), (6, 9), (9, 18), (12, 30)]
    assert all(r["cause"] == cause for r in result.changes["sums"] if r["op"] == "-")
    changes = result.metrics["changes"]
    assert (changes["added"], changes["retracted"], changes["retracted_share"]) == (9, 4, 4 / 9)
    assert len(result.speculative_latencies_ms) == 5
    assert changes["speculative_latency_ms"]["p50"] >= 0


def test_each_late_event_names_its_own_retractions():
    # Both late events land before 3 on key 0: each retracts the four sums after it, as the one before left them.
    arrival = [(3, 3), (6, 6), (9, 9), (12, 12), (0, 15), (1, 18)]
    result = fs.run(graphs.running_sum(), {"numbers": arrival}, reorder_latency=20, changes=True, batch_size=1)
    retracted = [(r["ts"], r["payload"], r["cause"]["position"]) for r in result.changes["sums"] if r["op"] == "-"]
    assert retracted == [(3, 3, 4), (6, 9, 4), (9, 18, 4), (12, 30, 4),
                         (3, 18, 5), (6, 24, 5), (9, 33, 5), (12, 45, 5)]
    assert {r["cause"]["ts"] for r in result.changes["sums"] if r["op"] == "-"} == {0, 1}


@pytest.mark.parametrize("batch_size", [1, 2, 4])
def test_a_retraction_left_waiting_names_its_late_event_whatever_the_batch_holds_beside_it(batch_size):
    # The first operator's re-run from the late (5, 1) retracts (45, 102) downstream: that tombstone leaves the
    # second operator's key waiting until the on-time (150, 100) of the same batch reaches it.
    def even_totals(total, value):
        total = (total or 0) + value
        return total, [total] if total % 2 == 0 else []

    def running(total, value):
        total = (total or 0) + value
        return total, [total]

    graph = fs.Graph("waiting")
    (graph.source("numbers").stateful(key=lambda n: n >= 100, update=even_totals, name="evens")
     .stateful(key=lambda n: 0, update=running, name="sums").sink("sums"))
    arrival = [(10, 2), (45, 100), (5, 1), (150, 100)]
    result = fs.run(graph, {"numbers": arrival}, reorder_latency=1000, changes=True, batch_size=batch_size)
    retracted = [(r["ts"], r["cause"]["ts"]) for r in result.changes["sums"] if r["op"] == "-"]
    assert all(cause == 5 for _, cause in retracted), retracted
    assert bool(retracted) == (batch_size < 4)  # in one batch the late event is applied in its place


def test_what_a_batch_retracts_and_makes_again_is_not_a_change():
    # The late 0 leaves key 0's sums as they were: nothing to retract, nothing to add again.
    arrival = [(3, 3), (6, 6), (0, 0)]
    result = fs.run(graphs.running_sum(), {"numbers": arrival}, reorder_latency=20, changes=True, batch_size=1)
    assert [r["op"] for r in result.changes["sums"]] == ["+", "+", "+"]


def _identity(entry) -> tuple:
    sink, item, _ = entry
    return sink, item.meta.ts, item.data


def _cancel_earliest(entries: list, entry) -> bool:
    """Remove the earliest of `entries` with `entry`'s sink, time and payload; True if there was one."""
    for index, other in enumerate(entries):
        if _identity(other) == _identity(entry):
            del entries[index]
            return True
    return False


def _batch_changes(entries: list) -> list:
    """What a batch must make of `entries`, the slow way: an item cancels the earliest retraction of the same sink,
    time and payload still waiting, and a tombstone first cancels the earliest item of the step it retracts,
    which never left."""
    added, waiting = [], []
    for entry in entries:
        if entry[1].tombstone:
            if not _cancel_earliest(added, entry):
                waiting.append(entry)
        elif not _cancel_earliest(waiting, entry):
            added.append(entry)
    return added + waiting


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 2), st.integers(0, 2), st.integers(0, 2),
                          st.booleans()), max_size=30))
def test_a_batch_cancels_exactly_what_it_undoes(drawn):
    # Paths differ where identities may not: the changelog matches on sink, event time and payload alone.
    entries = [(sink, Item(Meta(ts, "s", 0, (index, path)), None, bytes([payload]), tombstone), Cause("s", index, 0))
               for index, (sink, ts, path, payload, tombstone) in enumerate(drawn)]
    step = BatchChanges()
    for entry in entries:
        step.add(*entry)
    assert step.take() == _batch_changes(entries)
    assert step.take() == []


def test_a_batch_hands_an_operators_results_to_their_sink_before_the_next_operator_takes_any():
    calls = []

    def count(total, part):
        calls.append("count")
        total = (total or 0) + 1
        return total, [{"part": part, "count": total}, [part]]

    def collect(seen, part):
        calls.append("collect")
        return (seen or 0) + 1, [{"collected": part[0]}]

    graph = fs.Graph("two_levels")
    counted = (graph.source("words").flat_map(lambda text: text.split(), name="split")
               .stateful(key=lambda part: part, update=count, name="count"))
    postings, parts = counted.branch(lambda record: type(record) is dict, name="postings_or_parts")
    postings.sink("counts")
    parts.stateful(key=lambda part: 0, update=collect, name="collect").sink("collected")
    result = fs.run(graph, {"words": [(1, "a b c")]}, changes=True)
    # Every count ran (and its posting reached the sink as it was made) before the collector took a part.
    assert calls == ["count"] * 3 + ["collect"] * 3
    assert [record["payload"]["part"] for record in result.changes["counts"]] == ["a", "b", "c"]
    assert result.outputs["collected"] == [{"collected": part} for part in "abc"]


def test_without_changes_there_is_no_changelog():
    result = fs.run(graphs.running_sum(), {"numbers": [(1, 1), (0, 2)]}, reorder_latency=5)
    assert result.changes == {} and result.speculative_latencies_ms == [] and result.metrics["changes"] is None


def test_changes_must_be_a_bool():
    with pytest.raises(fs.OptionError, match="changes must be True or False"):
        fs.run(graphs.running_sum(), {"numbers": []}, changes="yes")


def test_a_sink_changelog_keeps_a_latency_per_live_output_and_refuses_to_retract_what_it_never_added():
    meta = Meta(5, "s", 0, (0,))
    changelog = Changelog(["out"])
    out = changelog.sinks["out"]
    out.add(Item(meta, 1, pack(1), False, 1.0), 1.5)
    out.add(Item(meta, 1, pack(1), False, 1.0), 1.25)  # an equal output: both are live
    assert sorted(out.latencies()) == [250.0, 500.0]
    late = Cause("s", 3, 7)
    changelog.retract("out", Item(meta, 1, pack(1), True), late)  # the latest `+` goes
    assert list(out.latencies()) == [500.0]
    changelog.retract("out", Item(meta, 1, pack(1), True), late)
    assert list(out.latencies()) == []
    records = changelog.records["out"]
    assert [(r["op"], r["ts"], r["payload"]) for r in records] == [("+", 5, 1), ("+", 5, 1), ("-", 5, 1), ("-", 5, 1)]
    assert records[2]["cause"] == {"source": "s", "ts": 3, "position": 7} and records[3]["cause"] is records[2]["cause"]
    with pytest.raises(InternalError, match=r"changelog of sink 'out' retracts an output of event ts=5 of source "
                                            r"'s' that it never added"):
        changelog.retract("out", Item(meta, 1, pack(1), True), late)
    result = fs.Result({"out": []}, [], {})
    changelog.fill(result)
    assert result.metrics["changes"]["added"] == 2 and result.metrics["changes"]["retracted"] == 2
