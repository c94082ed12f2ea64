"""The local engine's merge of a topic's partitions (io.kafka._earliest_first), against a plain reference over
random arrivals: each partition's records in their order, the earliest waiting one first, each partition ended
once, after its records."""
from collections import deque

from hypothesis import given, settings, strategies as st

from flamespark.io import kafka


def reference(arrivals, reading: set, limit: int) -> list:
    """The merged records, as the spec says it: pull arrivals while a partition still read has none waiting
    (and fewer than `limit` wait), then the earliest waiting record goes, the lowest partition on a tie."""
    arrivals, reading = iter(arrivals), set(reading)
    waiting = {p: deque() for p in reading}
    out = []
    while any(waiting.values()) or reading:
        while reading and sum(map(len, waiting.values())) < limit and any(not waiting[p] for p in reading):
            p, event = next(arrivals)
            if event is None:
                reading.discard(p)
            else:
                waiting[p].append(event)
        if any(waiting.values()):
            p = min((p for p in waiting if waiting[p]), key=lambda p: (waiting[p][0][0], p))
            out.append((p, waiting[p].popleft()))
    return out


@st.composite
def arrivals(draw):
    """Partitions of records `(ts, payload)` and an arrival order of them that keeps each partition's order,
    each partition's end `(p, None)` right after its last record, as the client delivers them."""
    parts = draw(st.lists(st.lists(st.integers(0, 20), min_size=1, max_size=8), min_size=1, max_size=4))
    left = {p: deque((ts, f"{p}:{i}") for i, ts in enumerate(times)) for p, times in enumerate(parts)}
    order = []
    while left:
        p = draw(st.sampled_from(sorted(left)))
        order.append((p, left[p].popleft()))
        if not left[p]:
            del left[p]
            order.append((p, None))
    return set(range(len(parts))), order


@settings(max_examples=300, deadline=None)
@given(arrivals(), st.integers(1, 6))
def test_the_merge_keeps_each_partitions_order_takes_the_earliest_first_and_ends_each_partition_once(
        given_arrivals, limit):
    reading, order = given_arrivals
    original = kafka.MERGE_LIMIT
    kafka.MERGE_LIMIT = limit
    try:
        merged = list(kafka._earliest_first(iter(order), reading))
    finally:
        kafka.MERGE_LIMIT = original
    assert [entry for entry in merged if entry[1] is not None] == reference(order, reading, limit)
    for p in reading:
        mine = [event for q, event in merged if q == p]
        assert mine[:-1] == [event for q, event in order if q == p and event is not None] and mine[-1] is None
