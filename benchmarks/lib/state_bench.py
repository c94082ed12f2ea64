"""Whether a micro-batch's cost grows with the state held: a running count over events of distinct keys.

Every event has a key of its own, so the count's state grows by one key per
event while every micro-batch brings the same number of rows. The report
compares the median batch time of the first and last third of the batches
(Spark's `triggerExecution`); a ratio near 1 means a batch costs what its
rows bring, not what the state holds. `state_bytes` makes each key's state
larger, so that the state held weighs more against Spark's fixed cost per batch.
With `keys`, the events cycle over that many keys instead: each key's log
then holds a step per event within the reorder latency, and a batch that
brings a key one more step shows whether it pays for the steps held too.
"""
from __future__ import annotations

import os
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

from benchmarks.lib.overhead.query_reports import QueryReportListener
from benchmarks.lib.overhead.workload import key_of
from flamespark.api import run
from flamespark.engines.spark.batch_time import stateful_operators
from flamespark.engines.spark.session import spark_session
from flamespark.graph import Graph
from flamespark.io.jsonl import write_jsonl
from flamespark.tools.machine import machine

GOAL = 1.2


def distinct_key_events(events: int, spacing_ms: int, keys: int | None = None) -> list:
    """`events` in-order events `{"ts", "key", "value"}`, each with a key of its own, or cycling over `keys` keys.

    >>> [event["key"] for event in distinct_key_events(3, 10, keys=2)]
    ['k0000000', 'k0000001', 'k0000000']
    """
    cycle = keys or events
    return [{"ts": i * spacing_ms, "key": f"k{i % cycle:07d}", "value": i} for i in range(events)]


def padded_count(state_bytes: int, state, event):
    """The running count of the event's key, with `state_bytes` more bytes of state per key."""
    seen = (state[0] if state else 0) + 1
    return [seen, "x" * state_bytes], [{"key": event["key"], "count": seen, "ts": event["ts"]}]


def state_graph(state_bytes: int) -> Graph:
    graph = Graph("state_count")
    update = partial(padded_count, state_bytes)
    graph.source("events").stateful(key=key_of, update=update, name="count").sink("counts")
    return graph


def thirds(batch_ms: list) -> dict:
    """The median batch time of the first and last third of `batch_ms`, and their ratio last/first."""
    third = max(1, len(batch_ms) // 3)
    first, last = statistics.median(batch_ms[:third]), statistics.median(batch_ms[-third:])
    return {"first_third_ms": first, "last_third_ms": last, "ratio": last / first if first else None}


def _batches(reports: list) -> list:
    """Per micro-batch: its rows, `triggerExecution` ms, and per stateful operator (source first) update and
    commit ms and the state rows it holds."""
    return [{
        "batch": report["batchId"],
        "rows": report.get("numInputRows", 0),
        "ms": report.get("durationMs", {}).get("triggerExecution", 0),
        "operators": [[state.get("allUpdatesTimeMs", 0), state.get("commitTimeMs", 0), state.get("numRowsTotal", 0)]
                      for state in stateful_operators(report)],
    } for report in reports if "durationMs" in report]


def _count(spark, path: Path, state_bytes: int, batch_rows: int, reorder_latency: int, shards: int):
    return run(state_graph(state_bytes), {"events": path}, engine="spark", spark=spark, shards=shards,
               max_rows_per_batch=batch_rows, reorder_latency=reorder_latency, late="fail", progress=False)


def state_bench(events: int = 30_000, state_bytes: int = 0, batch_rows: int = 1000, spacing_ms: int = 10,
                reorder_latency: int = 1000, warmup_batches: int = 3, master: str = "local[2]", shards: int = 2,
                spark=None, say=lambda text: None, keys: int | None = None) -> dict:
    """Run the count on Spark (on `spark`, or a session of `master`); the report with every batch's times.

    Each key's state holds its count and `state_bytes` more bytes; the
    events have a key each, or cycle over `keys` keys. A warm-up
    run of `warmup_batches` batches comes first, so that the first third is
    not charged with starting the session's Python workers.
    """
    with tempfile.TemporaryDirectory(prefix="flamespark-state-") as workdir:
        path, warm = Path(workdir) / "events.jsonl", Path(workdir) / "warmup.jsonl"
        write_jsonl(path, distinct_key_events(events, spacing_ms, keys))
        write_jsonl(warm, distinct_key_events(warmup_batches * batch_rows, spacing_ms, keys))
        say(f"starting Spark ({master}, {shards} shards)")
        spark = spark or spark_session(master, shards)
        if warmup_batches:
            say(f"warming up on {warmup_batches} batches")
            _count(spark, warm, state_bytes, batch_rows, reorder_latency, shards)
        listener = QueryReportListener()
        spark.streams.addListener(listener)
        try:
            listener.expect(f"flamespark_{state_graph(state_bytes).name}")
            say(f"counting {_events_and_keys(events, keys)}, {batch_rows} a micro-batch")
            started = time.perf_counter()
            result = _count(spark, path, state_bytes, batch_rows, reorder_latency, shards)
            wall_s = time.perf_counter() - started
            reports = listener.wait()
        finally:
            spark.streams.removeListener(listener)
    batches = _batches(reports)
    return {
        "benchmark": "batch time against state held: running count over events of distinct keys, or cycling over "
                     "keys (issue 11)",
        "input": {"events": events, "keys": keys or events, "state_bytes": state_bytes, "spacing_ms": spacing_ms,
                  "batch_rows": batch_rows, "reorder_latency_ms": reorder_latency},
        "spark": {"master": master, "shards": shards},
        "machine": dict(machine(), load_average=list(os.getloadavg())),
        "wall_s": wall_s,
        "outputs": len(result.outputs["counts"]),
        "batches": batches,
        "thirds": thirds([batch["ms"] for batch in batches]),
        "stage_thirds": thirds([batch["operators"][-1][0] + batch["operators"][-1][1] for batch in batches]),
        "goal": GOAL,
    }


def table(report: dict) -> str:
    """Every batch's times, then the thirds' medians and their ratio against the goal."""
    lines = [f"{'batch':>5} {'rows':>6} {'ms':>7}   per stateful operator, source first: update ms / commit ms / "
             "state rows"]
    for batch in report["batches"]:
        operators = "   ".join(f"{update:>5} /{commit:>5} /{rows:>7}" for update, commit, rows in batch["operators"])
        lines.append(f"{batch['batch']:>5} {batch['rows']:>6} {batch['ms']:>7,}   {operators}")
    thirds_ = report["thirds"]
    ratio = thirds_["ratio"]
    verdict = "met" if ratio is not None and ratio <= report["goal"] else "NOT met"
    given = report["input"]
    lines.append(f"{_events_and_keys(given['events'], given['keys'])} ({given['state_bytes']} more bytes "
                 f"of state each), {len(report['batches'])} micro-batches, "
                 f"{report['outputs']:,} outputs, {report['wall_s']:.1f} s")
    lines.append(f"median batch ms: first third {thirds_['first_third_ms']:,.0f}, last third "
                 f"{thirds_['last_third_ms']:,.0f}; ratio last/first {ratio:.2f} (goal <= {report['goal']}: {verdict})")
    stage = report["stage_thirds"]
    lines.append(f"median update + commit ms of the keyed stage: first third {stage['first_third_ms']:,.0f}, "
                 f"last third {stage['last_third_ms']:,.0f}; ratio {stage['ratio']:.2f}")
    return "\n".join(lines) + "\n"


def _events_and_keys(events: int, keys: int) -> str:
    return f"{events:,} events of distinct keys" if keys in (None, events) else f"{events:,} events over {keys:,} keys"

