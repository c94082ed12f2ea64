"""Windows and joins on the Spark engine: one query per mode and disorder runs a tumbling count, a session
collect, a hopping sum over the counts and a left join, and must release what the in-order program and the
local engine release, with buckets kept in Spark's state store."""
import random

import pytest

import flamespark as fs
from tests.test_joins import check_changes, reference_join, result_time
from tests.test_windows import assert_same_results, reference_windows, window_time

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
                    reorder_latency=LATENCY, max_rows_per_batch=10, changes=mode == "optimistic")
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
