"""The central invariant: released output equals the in-order run, under any disorder within D."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flamespark as fs
from tests import graphs
from tests.strategies import batch_sizes, disordered, in_order_events, unique_documents
from tests.oracles.reference import reference_run

MODES = ["optimistic", "buffered"]
NUMBER_GRAPHS = [graphs.running_sum, graphs.window3, graphs.chained_stateful, graphs.tally_in_place]


@st.composite
def number_case(draw):
    latency = draw(st.integers(0, 12))
    events = draw(in_order_events(st.integers(0, 20)))
    return latency, events, draw(disordered(events, latency)), draw(batch_sizes())


@st.composite
def document_case(draw):
    latency = draw(st.integers(0, 12))
    docs = unique_documents(draw)
    ts = sorted(draw(st.lists(st.integers(0, 40), min_size=len(docs), max_size=len(docs))))
    events = list(zip(ts, docs))
    return latency, events, draw(disordered(events, latency)), draw(batch_sizes())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("build", NUMBER_GRAPHS, ids=lambda b: b.__name__)
@settings(max_examples=150, deadline=None)
@given(case=number_case())
def test_number_graphs_match_in_order_run(build, mode, case):
    latency, events, arrival, every = case
    graph = build()
    result = fs.run(graph, {"numbers": arrival}, mode=mode, reorder_latency=latency, batch_size=every)
    assert result.outputs == reference_run(graph, {"numbers": events})
    assert result.late == []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("build, sink", [(graphs.fanout_collector, "documents"),
                                         (graphs.sharded_collectors, "chunked_documents")], ids=["one", "chunked"])
@settings(max_examples=150, deadline=None)
@given(case=document_case())
def test_fanout_collectors_match_in_order_run(build, sink, mode, case):
    latency, events, arrival, every = case
    graph = build()
    result = fs.run(graph, {"docs": arrival}, mode=mode, reorder_latency=latency, batch_size=every)
    expected = reference_run(graph, {"docs": events})
    assert result.outputs == expected
    assert len(result.outputs[sink]) == len(events)


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=100, deadline=None)
@given(left=number_case(), right=number_case())
def test_two_sources_match_in_order_run(mode, left, right):
    latency = max(left[0], right[0])
    graph = graphs.two_sources()
    inputs = {"left": left[2], "right": right[2]}
    result = fs.run(graph, inputs, mode=mode, reorder_latency=latency, batch_size=left[3])
    assert result.outputs == reference_run(graph, {"left": left[1], "right": right[1]})


def test_disorder_really_causes_replays():
    """The optimistic mode must actually retract: a late item re-does its key's tail."""
    graph = graphs.running_sum()
    arrival = [(3, 3), (6, 6), (9, 9), (12, 12), (0, 15)]
    result = fs.run(graph, {"numbers": arrival}, reorder_latency=20, batch_size=1)
    assert result.outputs["sums"] == [15, 18, 24, 33, 45]
    assert result.metrics["tombstones"] == 4
    assert result.metrics["replay_ratio"] == pytest.approx((5 + 4 + 4) / 5)
    buffered = fs.run(graph, {"numbers": arrival}, reorder_latency=20, mode="buffered", batch_size=1)
    assert buffered.outputs == result.outputs
    assert buffered.metrics["tombstones"] == 0


def test_identical_events_are_all_kept():
    graph = graphs.running_sum()
    arrival = [(5, 3), (5, 3), (4, 3), (5, 3)]
    result = fs.run(graph, {"numbers": arrival}, reorder_latency=5)
    assert result.outputs["sums"] == [3, 6, 9, 12]


def test_recomputed_state_equal_to_the_old_stops_the_cascade():
    """A late 0 leaves every later sum unchanged: the one retraction is remade identical and cancelled."""
    graph = graphs.running_sum()
    arrival = [(3, 3), (6, 6), (9, 9), (12, 12), (0, 0)]
    result = fs.run(graph, {"numbers": arrival}, reorder_latency=20, batch_size=1)
    assert result.outputs["sums"] == [0, 3, 9, 18, 30]
    assert result.metrics["tombstones"] == 0
    assert result.metrics["arrived_at_barrier"] == 5


@pytest.mark.parametrize("case, build, source", [(number_case(), graphs.running_sum, "numbers"),
                                                 (document_case(), graphs.fanout_collector, "docs")],
                         ids=["numbers", "documents"])
def test_the_drawn_disorders_make_the_optimistic_mode_retract(case, build, source):
    """The tests above are only as strong as their cases: a good share must make late items re-run state."""
    replayed = []

    @settings(max_examples=150, deadline=None, database=None, derandomize=True)
    @given(case=case)
    def draw(case):
        latency, _, arrival, every = case
        result = fs.run(build(), {source: arrival}, reorder_latency=latency, batch_size=every)
        replayed.append(result.metrics["tombstones"] > 0)

    draw()
    assert len(replayed) == 150 and sum(replayed) >= 150 // 4, f"{sum(replayed)} of {len(replayed)} retracted"
