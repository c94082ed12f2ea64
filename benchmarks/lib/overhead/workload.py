"""The benchmark's input, and query A: FlameSpark's running count per key."""
from __future__ import annotations

import math
import time

import numpy as np

from flamespark.api import run
from flamespark.graph import Graph
from flamespark.tools.disorder import disorder_events

# The stateful operators of FlameSpark's query for the running count, in plan order.
FLAMESPARK_OPERATORS = ["stage 1 + barrier"]


def make_events(events: int, keys: int, spacing_ms: int, percent: float, stddev_ms: float, seed: int) -> list:
    """`events` events `{"ts", "key", "value"}` spaced `spacing_ms` apart, in disordered arrival order."""
    rng = np.random.default_rng(seed)
    chosen = rng.integers(0, keys, size=events)
    ordered = [{"ts": i * spacing_ms, "key": f"k{int(k):04d}", "value": i} for i, k in enumerate(chosen)]
    return disorder_events(ordered, percent, stddev_ms, seed)


def max_lag(events) -> int:
    """The largest distance behind the newest earlier event: a reorder latency at which nothing is late."""
    newest, lag = -math.inf, 0
    for event in events:
        lag = max(lag, newest - event["ts"])
        newest = max(newest, event["ts"])
    return int(lag)


# --------------------------------------------------------- A: FlameSpark


def key_of(event):
    return event["key"]


def count(state, event):
    """The running count of the event's key, emitted with every event."""
    seen = (state or 0) + 1
    return seen, [{"key": event["key"], "count": seen, "ts": event["ts"]}]


def count_graph() -> Graph:
    graph = Graph("overhead_count")
    graph.source("events").stateful(key=key_of, update=count, name="count").sink("counts")
    return graph


def run_flamespark(spark, events_path, events: int, max_rows: int, reorder_latency: int, shards: int, listener) -> dict:
    """Run A once; the run's facts and Spark's progress reports."""
    listener.expect("flamespark_overhead_count")
    started = time.perf_counter()
    result = run(count_graph(), {"events": events_path}, engine="spark", spark=spark, shards=shards,
                 max_rows_per_batch=max_rows, reorder_latency=reorder_latency, late="fail", progress=False)
    total_s = time.perf_counter() - started
    reports = listener.wait()
    metrics = result.metrics
    return {
        "query": "flamespark",
        "wall_s": metrics["wall_s"],
        "total_s": total_s,
        "events": events,
        "outputs": len(result.outputs["counts"]),
        "late": metrics["late_dropped"] + metrics["late_adjusted"],
        "replay_ratio": metrics["replay_ratio"],
        "tombstones": metrics["tombstones"],
        "peak_buffered": metrics["peak_buffered"],
        "batches": metrics["engine"]["batches"],
        "reports": reports,
    }
