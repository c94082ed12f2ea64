"""Windows and joins on the Spark engine: one query per mode and disorder runs a tumbling count, a session
collect, a hopping sum over the counts and a left join, and must release what the in-order program and the
local engine release, with buckets kept in Spark's state store. Without a session, buckets kept in a store
batch by batch (as a Spark shard keeps them) make what buckets in memory make, and shrink as they are
collected."""
import math
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flamespark as fs
from flamespark.core.batch import Batch
from flamespark.core.codec import pack
from flamespark.core.items import Item, Meta, event_tiebreak
from flamespark.engines.spark.processors.buckets import StageState
from operators.aggregates import Aggregate
from operators.interval_join import JoinOperator, JoinSpec
from operators.windows import Hopping, Sessions, Tumbling, WindowOperator
from tests.oracles.changelog_checks import check_changes, replay
from tests.unit.test_spark_store import DictMap
from tests.engine.test_joins import reference_join, result_time
from tests.engine.test_windows import assert_same_results, reference_windows, window_time

LATENCY = 6


def key(payload):
    return payload["k"]


def graph():
    g = fs.Graph("windows_on_spark")
    events, clicks = g.source("events"), g.source("clicks")
    counts = events.tumbling_window(key, 5, name="counts").count()
    counts.sink("counts")
    counts.hopping_window(lambda r: r["key"], 10, 5, name="sums").sum(lambda r: r["value"]).sink("sums")
    events.session_window(key, 3, name="sessions").collect(lambda p: p["v"]).sink("sessions")
    events.interval_join(clicks, key, within=(-2, 4), how="left", name="joined").sink("joined")
    return g


def in_order(rnd, count):
    ts, events = 0, []
    for _ in range(count):
        ts += rnd.randint(0, 3)
        value = rnd.randint(0, 20)
        events.append((ts, {"t": ts, "k": value % 3, "v": value}))
    return events


def disorder(events, rnd):
    delays = [rnd.randint(0, LATENCY) for _ in events]
    return [events[i] for i in sorted(range(len(events)), key=lambda i: events[i][0] + delays[i])]


@pytest.mark.spark
@pytest.mark.parametrize("mode, seed", [("optimistic", 1), ("buffered", 3)])
def test_windows_and_joins_on_spark_match_the_in_order_program_and_the_local_engine(spark, mode, seed):
    """Every query costs seconds, so a few disorders drawn from fixed seeds (a failing case, shrunk by
    hypothesis, would cost minutes); the local tests draw thousands."""
    rnd = random.Random(seed)
    events, clicks = in_order(rnd, 40), in_order(rnd, 15)
    arrival = {"events": disorder(events, rnd), "clicks": disorder(clicks, rnd)}
    result = fs.run(graph(), arrival, engine="spark", spark=spark, shards=2, timeout=900, mode=mode,
                    reorder_latency=LATENCY, max_rows_per_batch=16, changes=True)
    outputs = result.outputs
    counts = reference_windows(events, "tumbling", {"size": 5}, "count")
    assert_same_results(outputs["counts"], counts, window_time)
    count_events = [(r["end"] - 1, {"t": r["end"] - 1, "k": r["key"], "f": r["value"]}) for r in counts]
    assert_same_results(outputs["sums"], reference_windows(count_events, "hopping", {"size": 10, "slide": 5}, "sum"),
                        window_time)
    assert_same_results(outputs["sessions"], reference_windows(events, "session", {"gap": 3}, "collect"),
                        window_time)
    joined = [payload for _, payload in reference_join(events, clicks, -2, 4, "left")]
    assert_same_results(outputs["joined"], joined, result_time(4))
    assert outputs == fs.run(graph(), arrival, reorder_latency=LATENCY, mode=mode).outputs
    assert result.late == []
    assert result.metrics["engine"]["batches"] >= 3
    if mode == "optimistic":
        check_changes(result, arrival)
    else:  # the buffered baseline's windows retract their running values too, with no late event to name
        for sink, changes in result.changes.items():
            assert Counter(data for _, data in replay(changes).elements()) == Counter(map(pack, outputs[sink]))


# --- buckets in a state store, batch by batch, without a Spark session -----------------------------

def as_items(arrival, side=None):
    """`(ts, payload)` events in arrival order as a source's items (tagged with a join `side` if given)."""
    items = []
    for position, (ts, payload) in enumerate(arrival):
        data = pack(payload)
        path = (position,) if side is None else (position, side)
        items.append(Item(Meta(ts, "events" if side is None else f"side{side}", event_tiebreak(data), path), payload,
                          data))
    return items


def batches(items, per_batch: int, latency: int):
    """`items` in batches of `per_batch`, each with the punctuation after it (the least over the sources of the
    newest time less `latency`), and a last, empty one at +inf."""
    newest = dict.fromkeys({item.meta.source for item in items}, -math.inf)
    for start in range(0, len(items), per_batch):
        part = items[start:start + per_batch]
        for item in part:
            newest[item.meta.source] = max(newest[item.meta.source], item.meta.ts)
        yield part, min(newest.values()) - latency
    yield [], math.inf


def counted(survivors: Counter, made):
    for out in made.items() if made else ():
        survivors[(out.meta, out.data)] += -1 if out.tombstone else 1


def stored_run(operator, items, per_batch: int, latency: int, store: DictMap) -> Counter:
    """The operator over `items` in batches, each on a StageState of its own over `store` (as a Spark shard runs
    a batch: state read from and written to the store, and what the shard's value keeps of it carried from batch
    to batch), with the batch's punctuation; what survives of its outputs and their tombstones, as the barrier
    counts them."""
    survivors, index = Counter(), None
    for part, time in batches(items, per_batch, latency):
        stage = StageState({operator.name: operator}, store, index)
        state = stage.states[operator.name]
        batch = Batch.of_items(part).in_meta_order()
        keys = operator.keys_of(batch)
        stage.read(operator.name, keys)
        counted(survivors, operator.take(batch, state, keys))
        counted(survivors, operator.punctuate(time, state))
        index = stage.save()
    return +survivors


def in_memory_run(operator, items, per_batch: int, latency: int) -> Counter:
    survivors, state = Counter(), operator.new_state()
    for part, time in batches(items, per_batch, latency):
        counted(survivors, operator.take(Batch.of_items(part), state))
        counted(survivors, operator.punctuate(time, state))
    return +survivors


OPERATORS = {
    "tumbling": lambda early: WindowOperator("w", key, Tumbling(5), Aggregate.collect(lambda p: p["v"]), early),
    "tumbling count": lambda early: WindowOperator("w", key, Tumbling(5), Aggregate.count(), early),
    "hopping": lambda early: WindowOperator("w", key, Hopping(7, 3), Aggregate.sum(lambda p: p["v"]), early),
    "session": lambda early: WindowOperator("w", key, Sessions(4), Aggregate.collect(lambda p: p["v"]), early),
}


@pytest.mark.parametrize("early", [False, True], ids=["final", "early"])
@pytest.mark.parametrize("kind", sorted(OPERATORS))
@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32), per_batch=st.integers(1, 12))
def test_window_state_kept_in_a_state_store_makes_what_state_in_memory_makes(kind, early, seed, per_batch):
    rnd = random.Random(seed)
    items = as_items(disorder(in_order(rnd, 40), rnd))
    stored = stored_run(OPERATORS[kind](early), items, per_batch, LATENCY, DictMap())
    assert stored == in_memory_run(OPERATORS[kind](early), items, per_batch, LATENCY)


@pytest.mark.parametrize("how", ["inner", "left", "left_anti"])
@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32), per_batch=st.integers(1, 12))
def test_join_buckets_kept_in_a_state_store_make_what_buckets_in_memory_make(how, seed, per_batch):
    rnd = random.Random(seed)
    lefts, rights = as_items(disorder(in_order(rnd, 25), rnd), 0), as_items(disorder(in_order(rnd, 25), rnd), 1)
    items = sorted(lefts + rights, key=lambda item: item.meta.path[0])  # the two inputs interleaved

    def join():
        return JoinOperator("j", key, JoinSpec(key, -3, 4, how))

    assert stored_run(join(), items, per_batch, LATENCY, DictMap()) == in_memory_run(join(), items, per_batch,
                                                                                    LATENCY)


@pytest.mark.parametrize("kind", sorted(OPERATORS))
def test_store_entries_shrink_to_what_the_reorder_latency_can_change(kind):
    """After a long run in order, the store holds a reorder latency's windows: its entries and their bytes do not
    grow with the stream."""
    store = DictMap()
    sizes, entries = [], []
    items = as_items(in_order(random.Random(7), 3_000))
    for start in range(0, len(items), 500):
        stored_run(OPERATORS[kind](False), items[start:start + 500], 50, LATENCY, store)
        rows = store.all_rows()
        sizes.append(sum(len(row[0]) for row in rows.values()))
        entries.append(len(rows))
    assert max(entries) <= 2 * entries[0] + 3, entries
    assert max(sizes) <= 2 * sizes[0], sizes
