"""The barrier, and late-event policies and bad inputs through `flamespark.run`."""
import math
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

import flamespark as fs
from barrier.barrier import Barrier
from flamespark.core.batch import Batch
from flamespark.core.codec import pack
from flamespark.core.items import Item, Meta
from tests import graphs


def item(ts, payload, tombstone=False, arrival=0.0):
    return Item(Meta(ts, "s", 0, (0,)), payload, pack(payload), tombstone, arrival)


def pushed(barrier, sink, *items):
    """Push `items` to `barrier` for `sink`, as one batch."""
    barrier.push(sink, Batch.of_items(list(items)))


@pytest.mark.parametrize("tombstone_first", [True, False])
@pytest.mark.parametrize("one_batch", [True, False])
def test_tombstone_cancels_its_item_in_either_order(tombstone_first, one_batch):
    barrier = Barrier()
    pair = [item(2, "old", tombstone=True), item(2, "old")]
    entries = [*(pair if tombstone_first else pair[::-1]), item(2, "new"), item(1, "first")]
    if one_batch:
        pushed(barrier, "out", *entries)
    else:
        for entry in entries:
            pushed(barrier, "out", entry)
    released = [(i.sink, i.payload) for i in barrier.punctuate(5)]
    assert released == [("out", "first"), ("out", "new")]
    assert (barrier.arrived, barrier.tombstones, barrier.released) == (4, 1, 2)


def test_release_waits_for_the_punctuation():
    barrier = Barrier()
    pushed(barrier, "out", *(item(t, t) for t in (3, 1, 2)))
    assert [i.payload for i in barrier.punctuate(1)] == [1]
    assert len(barrier) == 2
    assert [i.payload for i in barrier.punctuate(math.inf)] == [2, 3]


def test_batches_in_order_make_one_run_and_a_late_batch_a_run_of_its_own():
    barrier = Barrier()
    for times in ((1, 2), (3, 5), (4, 6), (7,)):
        pushed(barrier, "out", *(item(t, t) for t in times))
    assert [[row.meta[0] for row in run] for run in barrier.state.runs] == [[1, 2, 3, 5, 7], [4, 6]]
    assert [i.payload for i in barrier.punctuate(5)] == [1, 2, 3, 4, 5]
    assert [[row.meta[0] for row in run] for run in barrier.state.runs] == [[7], [6]]


def test_tombstone_that_never_met_its_item_is_loud():
    barrier = Barrier()
    pushed(barrier, "out", item(2, "ghost", tombstone=True))
    with pytest.raises(fs.InternalError, match="never met their item"):
        barrier.punctuate(2)


def test_an_item_pushed_for_two_sinks_is_released_for_each():
    barrier = Barrier()
    both = item(2, "both")
    pushed(barrier, "a", both)
    pushed(barrier, "b", both)
    pushed(barrier, "b", item(2, "both", tombstone=True))
    assert [(i.sink, i.payload) for i in barrier.punctuate(5)] == [("a", "both")]


SCRIPTS = st.lists(
    st.one_of(
        st.tuples(st.just("item"), st.integers(0, 4), st.integers(0, 1), st.sampled_from(["a", "b"]),
                  st.integers(0, 3)),
        st.tuples(st.just("tombstone"), st.integers(0, 20)),
        st.tuples(st.just("batch")),
        st.tuples(st.just("punctuate"), st.integers(0, 5)),
    ),
    max_size=60,
)


def script_rows(script) -> list:
    """The steps of `script` as pushes and punctuations: `("push", [(sink, item)])` for the rows up to each
    batch step or punctuation, `("punctuate", time)`. A tombstone step cancels the item of the n-th item step
    (mod their number); rows at or below the last punctuation are left out, as no engine sends them."""
    steps, rows, items, horizon = [], [], [], -math.inf
    for kind, *args in [*script, ("punctuate", math.inf)]:
        if kind == "item":
            ts, payload, sink, arrival = args
            items.append((sink, item(ts, payload, arrival=float(arrival))))
            if ts > horizon:
                rows.append(items[-1])
        elif kind == "tombstone":
            if items:
                sink, made = items[args[0] % len(items)]
                if made.meta.ts > horizon:
                    rows.append((sink, item(made.meta.ts, made.payload, tombstone=True, arrival=made.arrival)))
        else:
            steps.append(("push", rows))
            rows = []
            if kind == "punctuate":
                steps.append(("punctuate", args[0]))
                horizon = max(horizon, args[0])
    return steps


def barrier_releases(steps) -> list:
    """What a barrier releases at each punctuation of `steps`, or the internal error it raises."""
    barrier, released = Barrier(), []
    try:
        for kind, what in steps:
            if kind == "push":
                for sink in ("a", "b"):
                    pushed(barrier, sink, *(row for row_sink, row in what if row_sink == sink))
            else:
                released.append([(i.sink, tuple(i.meta), i.data) for i in barrier.punctuate(what)])
    except fs.InternalError as error:
        released.append("error")
    return released


def reference_releases(steps) -> list:
    """The same, the slow way: at each punctuation, every identity at or below it whose weights sum above zero,
    that many times, in (meta, sink, data) order; an identity whose weights sum below zero is an error."""
    held, released, horizon = Counter(), [], -math.inf
    for kind, what in steps:
        if kind == "push":
            for sink, row in what:
                held[(tuple(row.meta), sink, row.data)] += -1 if row.tombstone else 1
            continue
        if what <= horizon:
            released.append([])
            continue
        horizon = what
        due = sorted(identity for identity in held if identity[0][0] <= what)
        if any(held[identity] < 0 for identity in due):
            released.append("error")
            return released
        released.append([(sink, meta, data) for meta, sink, data in due for _ in range(held[(meta, sink, data)])])
        for identity in due:
            del held[identity]
    return released


@settings(max_examples=300, deadline=None)
@given(SCRIPTS)
def test_the_barrier_releases_what_the_weights_leave_whatever_the_batches(script):
    steps = script_rows(script)
    assert barrier_releases(steps) == reference_releases(steps)


def test_item_after_its_punctuation_is_an_internal_error():
    barrier = Barrier()
    barrier.punctuate(10)
    with pytest.raises(fs.InternalError, match="after punctuation 10"):
        pushed(barrier, "out", item(4, "late"))


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
    optimistic = fs.run(g, {"numbers": events}, reorder_latency=30, batch_size=1)
    buffered = fs.run(g, {"numbers": events}, reorder_latency=30, mode="buffered", batch_size=1)
    assert optimistic.metrics["peak_buffered"] == 0
    assert buffered.metrics["peak_buffered"] == 12  # events within 31 ms of the newest, before its punctuation


def test_the_barrier_package_hands_on_its_public_names():
    import barrier
    from barrier import Barrier as PublicBarrier, ImpatienceSorter
    from barrier.impatience import ImpatienceSorter as Sorter

    assert PublicBarrier is Barrier and ImpatienceSorter is Sorter
    assert sorted(barrier.__all__) == ["Barrier", "ImpatienceSorter"]
