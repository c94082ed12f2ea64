"""The barrier, and late-event policies and bad inputs through `flamespark.run`."""
import math
from itertools import chain, repeat

import pytest
from hypothesis import given, settings, strategies as st

import flamespark as fs
from barrier import barrier as barrier_module
from barrier.barrier import Barrier
from flamespark.core.codec import pack
from flamespark.core.items import Item, Meta
from tests import graphs


def item(ts, payload, tombstone=False, arrival=0.0):
    return Item(Meta(ts, "s", 0, (0,)), payload, pack(payload), tombstone, arrival)


@pytest.mark.parametrize("tombstone_first", [True, False])
def test_tombstone_cancels_its_item_in_either_order(tombstone_first):
    barrier = Barrier()
    pair = [item(2, "old", tombstone=True), item(2, "old")]
    for entry in pair if tombstone_first else pair[::-1]:
        barrier.push("out", entry)
    barrier.push("out", item(2, "new"))
    barrier.push("out", item(1, "first"))
    released = [(i.sink, i.payload) for i in barrier.punctuate(5)]
    assert released == [("out", "first"), ("out", "new")]
    assert (barrier.arrived, barrier.tombstones, barrier.released) == (4, 1, 2)


def test_release_waits_for_the_punctuation():
    barrier = Barrier()
    for t in (3, 1, 2):
        barrier.push("out", item(t, t))
    assert [i.payload for i in barrier.punctuate(1)] == [1]
    assert len(barrier) == 2
    assert [i.payload for i in barrier.punctuate(math.inf)] == [2, 3]


def test_tombstone_that_never_met_its_item_is_loud():
    barrier = Barrier()
    barrier.push("out", item(2, "ghost", tombstone=True))
    with pytest.raises(fs.InternalError, match="never met their item"):
        barrier.punctuate(2)


def test_settle_cancels_pairs_before_their_punctuation(monkeypatch):
    barrier = Barrier()
    barrier.settle()
    for entry in (item(2, "old"), item(3, "kept"), item(2, "old", tombstone=True)):
        barrier.push("out", entry)
    barrier.settle()
    monkeypatch.setattr(barrier_module, "_cancel", lambda entries: pytest.fail("cancelled at the punctuation"))
    assert [i.payload for i in barrier.punctuate(5)] == ["kept"]
    assert (barrier.arrived, barrier.tombstones, barrier.released) == (3, 1, 1)


def test_a_later_copy_of_a_settled_item_keeps_the_earliest_arrival():
    barrier = Barrier()
    barrier.settle()
    barrier.push("out", item(2, "copy", arrival=1.0))
    barrier.push("out", item(2, "copy", tombstone=True, arrival=1.0))
    barrier.settle()
    barrier.push("out", item(2, "copy", arrival=2.0))
    assert [(i.data, i.arrival) for i in barrier.punctuate(5)] == [(pack("copy"), 1.0)]


def test_an_item_pushed_for_two_sinks_is_released_for_each():
    barrier = Barrier()
    both = item(2, "both")
    barrier.push("a", both)
    barrier.push("b", both)
    barrier.push("b", item(2, "both", tombstone=True))
    assert [(i.sink, i.payload) for i in barrier.punctuate(5)] == [("a", "both")]
    assert both.sink == "a"


SCRIPTS = st.lists(
    st.one_of(
        st.tuples(st.just("item"), st.integers(0, 4), st.integers(0, 1), st.sampled_from(["a", "b"]),
                  st.integers(0, 3)),
        st.tuples(st.just("tombstone"), st.integers(0, 20)),
        st.tuples(st.just("settle"), st.one_of(st.none(), st.integers(0, 3))),
        st.tuples(st.just("punctuate"), st.integers(0, 5)),
    ),
    max_size=60,
)


def releases(script, settling: bool) -> list:
    """What a barrier holds and releases at each punctuation of `script` (settle steps skipped unless
    `settling`; one with a budget has time for that many event times), then at +inf, or the internal error it
    raises. A tombstone step cancels the item of the n-th item step (mod their number)."""
    barrier = Barrier()
    if settling:
        barrier.settle()  # from the first tombstone on
    pushed = []
    released = []
    try:
        for kind, *args in [*script, ("punctuate", math.inf)]:
            if kind == "settle":
                if settling:
                    barrier.settle(None if args[0] is None else chain([True] * args[0], repeat(False)).__next__)
            elif kind == "punctuate":
                released.append(len(barrier))  # what the engine notes as buffered
                released.append([(i.sink, tuple(i.meta), i.data, i.arrival) for i in barrier.punctuate(*args)])
            elif kind == "item":
                ts, payload, sink, arrival = args
                pushed.append((sink, item(ts, payload, arrival=float(arrival))))
                if ts > barrier.horizon:
                    barrier.push(*pushed[-1])
            elif pushed:
                sink, made = pushed[args[0] % len(pushed)]
                if made.meta.ts > barrier.horizon:
                    barrier.push(sink, item(made.meta.ts, made.payload, tombstone=True, arrival=made.arrival))
    except fs.InternalError as error:
        released.append(str(error))
    return released


@pytest.mark.slow  # 300 examples
@settings(max_examples=300, deadline=None)
@given(SCRIPTS)
def test_settling_never_changes_what_is_released(script):
    assert releases(script, settling=True) == releases(script, settling=False)


def test_tombstones_left_without_their_items_are_named_alike_with_or_without_settling():
    script = [("item", 1, 0, "a", 0), ("item", 1, 0, "b", 0), ("tombstone", 0), ("item", 0, 0, "a", 0),
              ("tombstone", 1), ("tombstone", 1), ("tombstone", 0)]  # one tombstone too many for each sink
    assert releases(script, settling=True) == releases(script, settling=False)
    assert "for sink 'a' from event ts=1" in releases(script, settling=True)[-1]


def test_item_after_its_punctuation_is_an_internal_error():
    barrier = Barrier()
    barrier.punctuate(10)
    with pytest.raises(fs.InternalError, match="after punctuation 10"):
        barrier.push("out", item(4, "late"))


LATE_INPUT = [(9, 9), (21, 21), (6, 6), (30, 30)]


def test_late_event_is_dropped_into_dead_letters():
    result = fs.run(graphs.running_sum(), {"numbers": LATE_INPUT}, reorder_latency=2)
    assert result.outputs["sums"] == [9, 30, 60]
    assert [(d["source"], d["ts"], d["payload"]) for d in result.late] == [("numbers", 6, 6)]
    assert result.metrics["late_dropped"] == 1


def test_late_event_is_adjusted_after_the_punctuation():
    result = fs.run(graphs.running_sum(), {"numbers": LATE_INPUT}, reorder_latency=2, late="adjust")
    assert result.outputs["sums"] == [9, 15, 36, 66]
    assert result.late == [] and result.metrics["late_adjusted"] == 1


def test_late_event_fails_the_run_when_asked():
    with pytest.raises(fs.LateEventError, match=r"event ts=6 of source 'numbers' \(position 2 in its arrival "
                                                r"order\) arrived after punctuation 18"):
        fs.run(graphs.running_sum(), {"numbers": LATE_INPUT}, reorder_latency=2, late="fail")


def test_an_event_exactly_reorder_latency_behind_is_on_time():
    result = fs.run(graphs.running_sum(), {"numbers": [(10, 3), (8, 3)]}, reorder_latency=2, late="fail")
    assert result.outputs["sums"] == [3, 6]


def test_ties_are_never_late_with_zero_latency():
    result = fs.run(graphs.running_sum(), {"numbers": [(1, 3), (1, 6)]}, late="fail")
    assert sorted(result.outputs["sums"]) in ([3, 9], [6, 9])


@pytest.mark.parametrize(
    "inputs, message",
    [
        ({"numbers": [("1", 1)]}, "input 'numbers', event #0: event time must be an integer"),
        ({"numbers": [(1.5, 1)]}, "event time must be an integer"),
        ({"numbers": [(True, 1)]}, "event time must be an integer"),
        ({"numbers": [(-(1 << 63) - 1, 1)]}, "event #0: event time is out of range"),
        ({"numbers": [(1, 1), 7]}, "input 'numbers', event #1: expected a \\(ts, payload\\) pair"),
        ({"numbers": [], "other": []}, "no source named 'other'"),
        ({}, "no input given for source\\(s\\) 'numbers'"),
        ({"numbers": [(1, {1, 2})]}, "source 'numbers' produced a payload msgpack cannot encode for event ts=1"),
    ],
)
def test_bad_input_is_named(inputs, message):
    with pytest.raises(fs.FlameSparkError, match=message):
        fs.run(graphs.running_sum(), inputs)


def test_peak_buffered_counts_the_baseline_sort_buffers():
    """Nothing reaches the sink, so only the baseline's sort buffer holds anything."""
    g = fs.Graph("silent")
    g.source("numbers").stateful(lambda v: 0, graphs.running_sum_update).filter(lambda v: False).sink("none")
    events = [(t, t) for t in range(0, 100, 3)]
    optimistic = fs.run(g, {"numbers": events}, reorder_latency=30)
    buffered = fs.run(g, {"numbers": events}, reorder_latency=30, mode="buffered")
    assert optimistic.metrics["peak_buffered"] == 0
    assert buffered.metrics["peak_buffered"] == 12  # events within 31 ms of the newest, before its punctuation


def test_the_barrier_package_hands_on_its_public_names():
    import barrier
    from barrier import Barrier as PublicBarrier, ImpatienceSorter
    from barrier.impatience import ImpatienceSorter as Sorter

    assert PublicBarrier is Barrier and ImpatienceSorter is Sorter
    assert sorted(barrier.__all__) == ["Barrier", "ImpatienceSorter"]
