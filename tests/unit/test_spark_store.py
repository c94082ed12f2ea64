"""The Spark engine's keyed state and held items over a map state, batch by batch, without a Spark session."""
import math
from operator import itemgetter
from unittest import mock

import msgpack
from hypothesis import given, settings
from hypothesis import strategies as st

from barrier.barrier import Barrier
from flamespark.core.batch import Batch
from flamespark.core.codec import pack
from flamespark.engines.spark.processors import held
from flamespark.engines.spark.processors.blob import BUCKETS_PREFIX
from flamespark.engines.spark.processors.buckets import StageState
from flamespark.engines.spark.rows import OUT, bundle_records
from operators import DictState, StatefulLoop, WindowedGrouping
from tests.graphs import running_sum_update
from tests.unit.test_store import OPERATORS, barrier_steps, item, keyed_steps, run, tombstone_of


class DictMap:
    """The calls a stage's states make on a `PipelinedMap` and `TimedRecords` on a MapState, over a dict; the user
    keys each touched. A prefixed view (`prefixed`) keeps its rows apart, in `views[prefix]`, and logs its calls
    with the others."""

    def __init__(self, calls=None):
        self.rows = {}
        self.calls = [] if calls is None else calls
        self.views = {}

    def prefixed(self, prefix: bytes, to_bytes=bytes) -> "DictMap":
        view = self.views.get(prefix)
        if view is None:
            view = self.views[prefix] = DictMap(self.calls)
        return view

    def all_rows(self) -> dict:
        """Every row, of the map and of its views, each under its view's prefix (b"" for the map's own)."""
        rows = {(b"", key): value for key, value in self.rows.items()}
        for prefix, view in self.views.items():
            rows.update(((prefix + inner, key), value) for (inner, key), value in view.all_rows().items())
        return rows

    def get_many(self, keys):
        return [self.getValue(key) for key in keys]

    def write(self, updates, removals):
        for key, value in updates:
            self.updateValue(key, value)
        for key in removals:
            self.removeKey(key)

    def getValue(self, key):
        self.calls.append(("get", key[0]))
        return self.rows.get(key)

    def updateValue(self, key, value):
        self.calls.append(("update", key[0]))
        self.rows[key] = value

    def removeKey(self, key):
        self.calls.append(("remove", key[0]))
        del self.rows[key]


def run_batches(operator, batches, store: DictMap) -> list:
    """Each batch of steps (as `test_store.run` takes them) on a StageState of its own over `store`, as a shard
    runs them; the outputs."""
    out = []
    for steps in batches:
        stage = StageState({operator.name: operator}, store)
        out += run(operator, stage.states[operator.name], steps)
        stage.save()
    return out


def cut(steps, cuts) -> list:
    bounds = [0, *sorted(c for c in cuts if c < len(steps)), len(steps)]
    return [steps[start:end] for start, end in zip(bounds, bounds[1:])]


def bucket_rows(store: DictMap) -> dict:
    """The stage's per-key entries, by user key."""
    return store.views[BUCKETS_PREFIX].rows


@settings(max_examples=100, deadline=None)
@given(case=keyed_steps(), cuts=st.sets(st.integers(1, 60), max_size=6), which=st.sampled_from(range(len(OPERATORS))))
def test_batches_over_the_map_state_give_the_outputs_of_one_in_memory_run_and_hold_the_same_buckets(
        case, cuts, which):
    steps, _ = case
    operator = OPERATORS[which][0]()
    in_memory = DictState(sweep_spacing=1)  # which collects every bucket a punctuation can forget from
    expected = run(operator, in_memory, steps)
    store = DictMap()
    assert run_batches(operator, cut(steps, cuts), store) == expected
    # A stored bucket may still hold what a punctuation could forget (until a batch touches its key again):
    # collected, it is the in-memory run's bucket, or empty where that run deleted it.
    for (key,), (blob,) in bucket_rows(store).items():
        (dumped,) = msgpack.unpackb(blob, strict_map_key=False).values()
        stored, kept = operator.load_bucket(dumped), in_memory.get(key)
        stored.collect(math.inf)
        if kept is None:
            assert stored.empty
        else:
            kept.collect(math.inf)
            assert operator.dump_bucket(stored) == operator.dump_bucket(kept)


def test_a_batch_reads_and_writes_only_the_keys_it_touches():
    operator = StatefulLoop("sum", key=lambda v: v % 3, update=running_sum_update)
    one, two = pack(1), pack(2)
    store = DictMap()

    def calls(steps):
        store.calls.clear()
        run_batches(operator, [steps], store)
        return sorted(store.calls)

    assert calls([[item(1, 1), item(2, 2)], 1]) == [("get", one), ("get", two), ("update", one), ("update", two)]
    # Key 2's step at 2 is not forgotten until a batch touches key 2 again.
    assert calls([item(4, 4), 3]) == [("get", one), ("update", one)]
    assert calls([math.inf]) == []
    assert calls([item(5, 8), 5]) == [("get", two), ("update", two)]
    (blob,) = bucket_rows(store)[(two,)]
    (dumped,) = msgpack.unpackb(blob, strict_map_key=False).values()
    assert dumped[1] == []  # its steps at 2 and 5 are both forgotten, the total kept


def test_operators_keyed_alike_in_one_stage_read_and_write_each_key_once():
    grouping = WindowedGrouping("g", key=lambda v: v % 3, window=1)
    total = StatefulLoop("total", key=lambda v: v % 3, update=running_sum_update)
    operators = {"g": grouping, "total": total}
    store = DictMap()
    stage = StageState(operators, store)
    for operator in (grouping, total):
        run(operator, stage.states[operator.name], [[item(1, 1), item(2, 4)]])
    stage.save()
    assert store.calls == [("get", pack(1)), ("update", pack(1))]
    entry = msgpack.unpackb(bucket_rows(store)[(pack(1),)][0], strict_map_key=False)
    assert sorted(entry) == [0, 1]  # each operator's bucket, under its place in the stage
    # A window-1 grouping forgets its bucket once a punctuation passes it; the running total keeps its state.
    store.calls.clear()
    stage = StageState(operators, store)
    for operator in (grouping, total):
        run(operator, stage.states[operator.name], [item(7, 7), 8])
    stage.save()
    assert store.calls == [("get", pack(1)), ("update", pack(1))]
    assert sorted(msgpack.unpackb(bucket_rows(store)[(pack(1),)][0], strict_map_key=False)) == [1]


def test_a_punctuation_removes_the_buckets_it_empties():
    grouping = WindowedGrouping("g", key=lambda v: v, window=1)
    store = DictMap()
    run_batches(grouping, [[[item(1, "a"), item(5, "b")], 2]], store)
    # A window-1 bucket keeps nothing once collected: "a" empties in the batch that brought it, and is never written.
    assert set(bucket_rows(store)) == {(pack("b"),)}
    store.calls.clear()
    run_batches(grouping, [[tombstone_of(item(5, "b")), 6]], store)
    assert store.calls == [("get", pack("b")), ("remove", pack("b"))] and bucket_rows(store) == {}


def released_rows(rows) -> list:
    return [(sink, tuple(meta), data, arrival)
            for row in rows if row[0] == OUT for sink, meta, data, _, arrival, _ in bundle_records(row[5])]


def pushed(barrier, sink, *items):
    barrier.push(sink, Batch.of_items(list(items)))


@settings(max_examples=150, deadline=None)
@given(steps=barrier_steps(), cuts=st.sets(st.integers(1, 30), max_size=6), chunk=st.integers(1, 4))
def test_a_stored_barrier_releases_batch_by_batch_as_one_in_memory(steps, cuts, chunk):
    whole, expected = Barrier(), []
    store, saved, released, counters = DictMap(), None, [], None
    with mock.patch.object(held, "CHUNK", chunk):
        for batch in cut(steps + [math.inf], cuts):
            stored = held.StoredBarrier(store, saved)
            for step in batch:
                if not isinstance(step, tuple):
                    expected += [(i.sink, tuple(i.meta), i.data, i.arrival) for i in whole.punctuate(step)]
                    released += released_rows(stored.release(1, 0, step))
                    continue
                sink, ts, payload, tombstone = step
                if ts > whole.horizon:
                    for barrier in (whole, stored.barrier):
                        pushed(barrier, sink, item(ts, payload))
                        if tombstone:
                            pushed(barrier, sink, item(ts, payload, tombstone=True))
            saved = msgpack.unpackb(msgpack.packb(stored.save()), strict_map_key=False)
            counters = saved[0]
    # A release's bundle holds each sink's rows apart, each in the order the barrier released them.
    assert sorted(released, key=itemgetter(0)) == sorted(expected, key=itemgetter(0))
    assert counters == [whole.horizon, whole.arrived, whole.tombstones, whole.released]
    assert store.rows == {} and saved[1][1] == {}


def test_a_release_reads_only_the_chunks_holding_what_it_releases():
    store = DictMap()
    stored = held.StoredBarrier(store, None)
    pushed(stored.barrier, "out", *(item(ts, ts) for ts in (5, 1, 9, 7)))
    with mock.patch.object(held, "CHUNK", 2):
        assert released_rows(stored.release(1, 0, 0)) == []
        saved = stored.save()  # chunks [1, 5] and [7, 9], written without reading
        assert store.calls == [("update", 0), ("update", 1)]
        assert saved[1] == [2, {0: [1, 2], 1: [7, 2]}]
        store.calls.clear()
        stored = held.StoredBarrier(store, saved)
        pushed(stored.barrier, "out", item(6, 6))
        assert [meta for _, meta, _, _ in released_rows(stored.release(1, 0, 5))] == [
            tuple(item(1, 1).meta), tuple(item(5, 5).meta)]
        saved = stored.save()
    assert store.calls == [("get", 0), ("remove", 0), ("update", 2)]
    assert saved[1] == [3, {1: [7, 2], 2: [6, 1]}] and stored.earliest() == 6
