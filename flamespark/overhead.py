"""FlameSpark's overhead on Spark against an order-ignorant stateful query (issue 3).

    python -m flamespark.overhead [--events N] [--keys K] [--batch-rows R] [--repeat 2] [--out report.json]

Both queries count events per key, one output per event, on one SparkSession:

A. FlameSpark: `source("events").stateful(key, count).sink("counts")` through
   `flamespark.run(engine="spark")`: ingest, and one keyed stage holding the
   barrier, two `transformWithStateInPandas` operators, exact in event-time order.
B. What a Spark user writes when order does not matter: the same replay file
   through the same replay source (same micro-batches), a `mapInArrow` that
   decodes the msgpack payload to its key, then `groupBy(key)` and one
   `transformWithStateInPandas` keeping the key's count in a ValueState
   (`--baseline key`, the default), or `groupBy(shard)` with one msgpack dict
   per shard like FlameSpark keeps (`--baseline shard`); counts in arrival
   order; each micro-batch collected once and written to a part file.

A and B run alternately `--repeat` times after a small warm-up run of each
(a few micro-batches, not charged to either);
the report has every run, the medians and the ratio A/B of query wall time
(goal: at most 1.5), and where the time goes per stateful operator, from
Spark's own progress reports.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

import msgpack
import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql.streaming import StatefulProcessor, StreamingQueryListener

from flamespark.api import run
from flamespark.codec import pack
from flamespark.arguments import non_negative_float
from flamespark.disorder import disorder_events
from flamespark.graph import Graph
from flamespark.jsonl import write_atomic, write_jsonl

GOAL = 1.5
WARMUP_BATCHES = 4
BASELINES = ("key", "shard")
BASELINE_SCHEMA = "key STRING, count LONG, ts LONG"


def _progress(text: str):
    print(f"overhead: {text}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ input


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
    progress = listener.wait()
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
        "batches": metrics["batches"],
        "progress": progress,
    }


# -------------------------------------------------- B: order-ignorant query


class KeyCounter(StatefulProcessor):
    """Grouped by key: the key's count in a ValueState; rows counted in the order they come."""

    def init(self, handle):
        self.seen = handle.getValueState("seen", "n LONG")

    def handleInputRows(self, key, rows, timerValues):
        batch = pd.concat(list(rows), ignore_index=True)
        stored = self.seen.get()  # None for a new key: one state call, not exists() + get()
        before = stored[0] if stored else 0
        counts = np.arange(before + 1, before + len(batch) + 1, dtype=np.int64)
        self.seen.update((int(counts[-1]),))
        yield pd.DataFrame({"key": batch["key"], "count": counts, "ts": batch["ts"]})

    def close(self):
        pass


class ShardCounter(StatefulProcessor):
    """Grouped by shard: all of the shard's counts in one msgpack dict (one state read and write a batch)."""

    def init(self, handle):
        self.blob = handle.getValueState("counts", "blob BINARY")

    def handleInputRows(self, key, rows, timerValues):
        batch = pd.concat(list(rows), ignore_index=True)
        stored = self.blob.get()
        counts = msgpack.unpackb(stored[0]) if stored else {}
        before = batch["key"].map(counts).fillna(0).astype(np.int64)
        batch["count"] = before + batch.groupby("key").cumcount() + 1
        counts.update(batch.groupby("key")["count"].max().astype(int).to_dict())
        self.blob.update((msgpack.packb(counts),))
        yield batch[["key", "count", "ts"]]

    def close(self):
        pass


def decoder(shards: int):
    """`mapInArrow` function: replay rows to `key, ts, shard`, the key read from the msgpack payload."""

    def decode(batches):
        for batch in batches:
            keys = [msgpack.unpackb(data)["key"] for data in batch.column("payload").to_pylist()]
            shard = [zlib.crc32(key.encode()) % shards for key in keys]
            yield pa.RecordBatch.from_arrays(
                [pa.array(keys, pa.string()), batch.column("ts"), pa.array(shard, pa.int32())],
                names=["key", "ts", "shard"])

    return decode


def build_baseline(spark, replay_path, max_rows: int | None, baseline: str = "key", shards: int = 2):
    """B as a streaming DataFrame of `key, count, ts`: one row per event."""
    from flamespark.engines.spark.replay import ReplaySource
    from flamespark.engines.spark.rows import EVENT

    if baseline not in BASELINES:
        raise ValueError(f"baseline must be one of {', '.join(BASELINES)}, got {baseline!r}")
    spark.dataSource.register(ReplaySource)
    reader = spark.readStream.format(ReplaySource.name()).option("path", str(replay_path)).option("source", "events")
    if max_rows:
        reader = reader.option("maxRowsPerBatch", str(max_rows))
    events = reader.load().filter(f"kind = '{EVENT}'").select("ts", "payload")
    decoded = events.mapInArrow(decoder(shards), "key STRING, ts LONG, shard INT")
    if baseline == "key":
        grouped, processor = decoded.select("key", "ts").groupBy("key"), KeyCounter()
    else:
        grouped, processor = decoded.groupBy("shard"), ShardCounter()
    return grouped.transformWithStateInPandas(
        statefulProcessor=processor, outputStructType=BASELINE_SCHEMA, outputMode="Append", timeMode="None")


class PartWriter:
    """`foreachBatch` sink like FlameSpark's: one collect, one part file per batch via a rename."""

    def __init__(self, directory):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def __call__(self, frame, batch_id):
        rows = frame.collect()
        path = self.directory / f"batch-{batch_id:08d}.msgpack"
        temporary = path.with_suffix(".tmp")
        temporary.write_bytes(msgpack.packb({"batch": batch_id, "released_at": time.time(),
                                             "outputs": [[r.key, r["count"], r.ts] for r in rows]}))
        os.replace(temporary, path)

    def outputs(self) -> int:
        return sum(len(msgpack.unpackb(p.read_bytes())["outputs"]) for p in self.directory.glob("batch-*.msgpack"))

    def batches(self) -> int:
        return len(list(self.directory.glob("batch-*.msgpack")))


def write_baseline_input(path, events) -> int:
    """B's replay file: the payloads encoded as FlameSpark encodes them for its own replay file."""
    from flamespark.engines.spark.replay import write_replay_file

    return write_replay_file(path, ((event["ts"], pack(event)) for event in events))


def run_baseline(spark, replay_path, events: int, max_rows: int | None, baseline: str, shards: int, listener,
                 timeout: float | None = None) -> dict:
    """Run B once from an existing replay file; the run's facts and Spark's progress reports."""
    workdir = Path(tempfile.mkdtemp(prefix="flamespark-overhead-"))
    try:
        name = f"overhead_baseline_{baseline}"
        listener.expect(name)
        started = time.perf_counter()
        stream = build_baseline(spark, replay_path, max_rows, baseline, shards)
        writer = PartWriter(workdir / "parts")
        query_started = time.perf_counter()
        query = (stream.writeStream.foreachBatch(writer).trigger(availableNow=True)
                 .option("checkpointLocation", str(workdir / "checkpoint")).queryName(name).start())
        if query.awaitTermination(timeout) is False:  # a failed query raises here
            query.stop()
            raise RuntimeError(f"the baseline query did not finish within {timeout} s")
        wall_s = time.perf_counter() - query_started
        outputs, batches = writer.outputs(), writer.batches()
        total_s = time.perf_counter() - started
        progress = listener.wait()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return {"query": f"baseline-{baseline}", "wall_s": wall_s, "total_s": total_s, "events": events,
            "outputs": outputs, "batches": batches, "progress": progress}


# ------------------------------------------------------- Spark's progress


class ProgressListener(StreamingQueryListener):
    """Keeps the progress reports of the next query named as expected, until it terminates.

    Listener callbacks run on a py4j thread, and an exception there never
    reaches us (Spark logs and drops it), hence the broad try blocks.
    """

    def __init__(self):
        self.lock = threading.Condition()
        self.name = None
        self.run_id = None
        self.reports = []
        self.done = False

    def expect(self, name: str):
        with self.lock:
            self.name, self.run_id, self.reports, self.done = name, None, [], False

    def wait(self, timeout: float = 60.0) -> list:
        """The reports of the expected query, once it terminated (or after `timeout` s, what came)."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while not self.done and time.monotonic() < deadline:
                self.lock.wait(max(0.0, deadline - time.monotonic()))
            return sorted(self.reports, key=lambda report: report["batchId"])

    def onQueryStarted(self, event):
        try:
            with self.lock:
                if event.name == self.name and self.run_id is None:
                    self.run_id = str(event.runId)
        except Exception:  # noqa: BLE001 - see the class docstring
            pass

    def onQueryProgress(self, event):
        try:
            report = json.loads(event.progress.json)
            with self.lock:
                if report.get("runId") == self.run_id:
                    self.reports.append(report)
        except Exception:  # noqa: BLE001
            pass

    def onQueryIdle(self, event):
        pass

    def onQueryTerminated(self, event):
        try:
            with self.lock:
                if str(event.runId) == self.run_id:
                    self.done = True
                    self.lock.notify_all()
        except Exception:  # noqa: BLE001
            pass


def time_split(progress: list, operator_names: list) -> dict:
    """Totals over a run's micro-batches: driver-side phases and, per stateful operator, task time."""
    durations = {}
    for report in progress:
        for phase, ms in report.get("durationMs", {}).items():
            durations[phase] = durations.get(phase, 0) + ms
    found = max((len(report.get("stateOperators", [])) for report in progress), default=0)
    if found != len(operator_names):
        operator_names = [f"stateful {index + 1}" for index in range(found)]
    operators = []
    for index, name in enumerate(operator_names):
        totals = {"name": name, "update_ms": 0, "commit_ms": 0, "state_rows": 0}
        for report in progress:
            # Spark lists stateful operators from the sink back to the source.
            state = list(reversed(report.get("stateOperators", [])))
            if index < len(state):
                totals["update_ms"] += state[index].get("allUpdatesTimeMs", 0)
                totals["commit_ms"] += state[index].get("commitTimeMs", 0)
                totals["state_rows"] = state[index].get("numRowsTotal", 0)
        operators.append(totals)
    batch_ms = [report["durationMs"].get("triggerExecution", 0) for report in progress if "durationMs" in report]
    batches = [{
        "batch": report["batchId"],
        "rows": report.get("numInputRows"),
        "ms": {phase: report.get("durationMs", {}).get(phase, 0) for phase in ("triggerExecution", "addBatch", "queryPlanning")},
        "operators": [[state.get("allUpdatesTimeMs", 0), state.get("commitTimeMs", 0)]
                      for state in reversed(report.get("stateOperators", []))],
    } for report in progress]
    return {
        "micro_batches": len(progress),
        "batch_ms": {"median": statistics.median(batch_ms) if batch_ms else None,
                     "max": max(batch_ms, default=None), "all": batch_ms},
        # The first micro-batch of a query also plans it and starts its Python runners and state stores.
        "first_batch_s": batch_ms[0] / 1000 if batch_ms else None,
        "later_batches_s": sum(batch_ms[1:]) / 1000,
        "phases_ms": durations,
        "stateful_operators": len(operator_names),
        "operators": operators,
        "batches": batches,
    }


# The stateful operators of FlameSpark's query for the running count, in plan order.
FLAMESPARK_OPERATORS = ["ingest", "stage 1 + barrier"]


def summarize(run_facts: dict, operator_names: list) -> dict:
    """A run's report entry: facts, events/s, and the time split instead of the raw progress."""
    facts = {key: value for key, value in run_facts.items() if key != "progress"}
    facts["events_per_s"] = facts["events"] / facts["wall_s"] if facts["wall_s"] > 0 else None
    facts["time"] = time_split(run_facts["progress"], operator_names)
    return facts


# ------------------------------------------------------------ benchmark


def benchmark(args, spark=None) -> dict:
    """Warm up, run A and B alternately `args.repeat` times, and return the report."""
    from flamespark.engines.spark.session import spark_session

    workdir = Path(tempfile.mkdtemp(prefix="flamespark-overhead-"))
    try:
        _progress(f"generating {args.events:,} events over {args.keys} keys "
                  f"({args.percent:g} % delayed by |N(0, {args.stddev_ms:g} ms)|, ts every {args.spacing_ms} ms)")
        events = make_events(args.events, args.keys, args.spacing_ms, args.percent, args.stddev_ms, args.seed)
        reorder_latency = max_lag(events)
        events_path, replay_path = workdir / "events.jsonl", workdir / "events.replay"
        write_jsonl(events_path, events)
        write_baseline_input(replay_path, events)
        warm = events[: args.warmup_events]
        warm_path, warm_replay = workdir / "warmup.jsonl", workdir / "warmup.replay"
        write_jsonl(warm_path, warm)
        write_baseline_input(warm_replay, warm)

        _progress(f"starting Spark ({args.master}, {args.shards} shuffle partitions)")
        started = time.perf_counter()
        spark = spark or spark_session(args.master, args.shards)
        session_s = time.perf_counter() - started
        for setting in args.conf or []:
            key, _, value = setting.partition("=")
            spark.conf.set(key, value)
        listener = ProgressListener()
        spark.streams.addListener(listener)
        a_names = FLAMESPARK_OPERATORS
        b_names = [f"count by {args.baseline}"]
        try:
            # Several micro-batches, so that the warm-up also runs the later-batch path (state to load).
            warm_rows = max(1, math.ceil(len(warm) / WARMUP_BATCHES))
            _progress(f"session ready in {session_s:.1f} s; warming up on {len(warm)} events, {warm_rows} a batch")
            warmup = [
                summarize(run_flamespark(spark, warm_path, len(warm), warm_rows, max_lag(warm), args.shards,
                                         listener), a_names),
                summarize(run_baseline(spark, warm_replay, len(warm), warm_rows, args.baseline, args.shards,
                                       listener), b_names),
            ]
            _progress("warm-up: " + ", ".join(f"{w['query']} {w['wall_s']:.1f} s" for w in warmup))
            runs = []
            for index in range(1, args.repeat + 1):
                pair = {}
                for query in (("flamespark", "baseline") if index % 2 else ("baseline", "flamespark")):
                    _progress(f"run {index}/{args.repeat}: {query} ...")
                    if query == "flamespark":
                        facts = run_flamespark(spark, events_path, len(events), args.batch_rows, reorder_latency,
                                               args.shards, listener)
                        pair[query] = summarize(facts, a_names)
                    else:
                        facts = run_baseline(spark, replay_path, len(events), args.batch_rows, args.baseline,
                                             args.shards, listener)
                        pair[query] = summarize(facts, b_names)
                    done = pair[query]
                    _progress(f"run {index}/{args.repeat}: {query} {done['wall_s']:.1f} s, "
                              f"{done['events_per_s']:,.0f} events/s, {done['batches']} batches, "
                              f"{done['outputs']:,} outputs")
                pair["ratio"] = pair["flamespark"]["wall_s"] / pair["baseline"]["wall_s"]
                pair["run"] = index
                runs.append(pair)
        finally:
            spark.streams.removeListener(listener)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return make_report(args, runs, warmup, reorder_latency, session_s)


def _median(values):
    values = [value for value in values if value is not None]
    return statistics.median(values) if values else None


def make_report(args, runs: list, warmup: list, reorder_latency: int, session_s: float) -> dict:
    medians = {}
    for query in ("flamespark", "baseline"):
        entries = [pair[query] for pair in runs]
        medians[query] = {
            "wall_s": _median([e["wall_s"] for e in entries]),
            "total_s": _median([e["total_s"] for e in entries]),
            "events_per_s": _median([e["events_per_s"] for e in entries]),
            "micro_batches": _median([e["time"]["micro_batches"] for e in entries]),
            "batch_ms": _median([e["time"]["batch_ms"]["median"] for e in entries]),
            "first_batch_s": _median([e["time"]["first_batch_s"] for e in entries]),
            "later_batches_s": _median([e["time"]["later_batches_s"] for e in entries]),
        }
    for pair in runs:
        later = pair["baseline"]["time"]["later_batches_s"]
        pair["later_batches_ratio"] = pair["flamespark"]["time"]["later_batches_s"] / later if later else None
    ratio = _median([pair["ratio"] for pair in runs])
    checks = {
        "flamespark_outputs_equal_events": all(p["flamespark"]["outputs"] == args.events for p in runs),
        "baseline_outputs_equal_events": all(p["baseline"]["outputs"] == args.events for p in runs),
        "same_micro_batches": all(p["flamespark"]["time"]["micro_batches"] == p["baseline"]["time"]["micro_batches"]
                                  for p in runs),
        "nothing_late": all(p["flamespark"]["late"] == 0 for p in runs),
    }
    return {
        "benchmark": "overhead of FlameSpark over an order-ignorant Spark stateful query (issue 3)",
        "input": {"events": args.events, "keys": args.keys, "spacing_ms": args.spacing_ms, "percent": args.percent,
                  "stddev_ms": args.stddev_ms, "seed": args.seed, "batch_rows": args.batch_rows,
                  "reorder_latency_ms": reorder_latency},
        "queries": {
            "flamespark": "flamespark.run(engine='spark'): replay -> ingest TWS (by source) -> stateful count TWS "
                          "+ barrier (by shard) -> foreachBatch",
            "baseline": f"replay -> mapInArrow (decode key) -> groupBy({args.baseline}) TWS "
                        + ("(ValueState count per key)" if args.baseline == "key" else "(msgpack dict per shard)")
                        + " -> foreachBatch",
        },
        "spark": {"master": args.master, "shards": args.shards, "conf": args.conf or [], "session_start_s": session_s},
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                    "load_average": list(os.getloadavg())},
        "warmup": warmup,
        "runs": runs,
        "median": medians,
        "ratio": ratio,
        "later_batches_ratio": _median([pair["later_batches_ratio"] for pair in runs]),
        "goal": GOAL,
        "goal_met": ratio is not None and ratio <= GOAL,
        "checks": checks,
    }


# --------------------------------------------------------------- output


def table(report: dict) -> str:
    """The per-run table, the medians and the ratio; then where each query's time goes."""
    lines = [f"{'run':<6} {'query':<14} {'wall s':>7} {'events/s':>8} {'batches':>7} {'batch p50 ms':>12} "
             f"{'1st batch s':>11} {'later s':>8} {'outputs':>7} {'A/B':>5}"]

    def row(label, query, entry, ratio=""):
        split = entry.get("time", entry)
        batch_ms = split["batch_ms"] if "time" not in entry else split["batch_ms"]["median"]
        lines.append(f"{label:<6} {query:<14} {entry['wall_s']:>7.1f} {entry['events_per_s']:>8,.0f} "
                     f"{split['micro_batches']:>7g} {batch_ms or 0:>12,.0f} {split['first_batch_s'] or 0:>11.1f} "
                     f"{split['later_batches_s']:>8.1f} {entry.get('outputs', ''):>7} {ratio:>5}")

    for pair in report["runs"]:
        row(str(pair["run"]), "flamespark", pair["flamespark"], f"{pair['ratio']:.2f}")
        row("", pair["baseline"]["query"], pair["baseline"])
    median = report["median"]
    row("median", "flamespark", median["flamespark"], f"{report['ratio']:.2f}")
    row("", report["runs"][0]["baseline"]["query"] if report["runs"] else "baseline", median["baseline"])
    verdict = "met" if report["goal_met"] else "NOT met"
    lines.append(f"ratio A/B of wall time (median): {report['ratio']:.2f} (goal <= {report['goal']}: {verdict}); "
                 f"of the batches after the first: {report['later_batches_ratio']:.2f}")
    lines.append("")
    lines.append("where the time goes (last run; task time summed over the shuffle partitions):")
    lines.append(f"  {'query':<14} {'operator':<16} {'update ms':>10} {'commit ms':>10}")
    last = report["runs"][-1] if report["runs"] else {}
    for query in ("flamespark", "baseline"):
        if query not in last:
            continue
        entry = last[query]
        for operator in entry["time"]["operators"]:
            lines.append(f"  {entry['query']:<14} {operator['name']:<16} {operator['update_ms']:>10,} "
                         f"{operator['commit_ms']:>10,}")
        phases = entry["time"]["phases_ms"]
        lines.append(f"  {entry['query']:<14} {'(batch total)':<16} addBatch {phases.get('addBatch', 0):,} ms, "
                     f"walCommit {phases.get('walCommit', 0):,} ms, queryPlanning {phases.get('queryPlanning', 0):,} ms, "
                     f"triggerExecution {phases.get('triggerExecution', 0):,} ms")
    failed = [name for name, ok in report["checks"].items() if not ok]
    lines.append("checks: " + ("all passed" if not failed else "FAILED " + ", ".join(failed)))
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m flamespark.overhead",
        description="Events/s of a per-key running count through FlameSpark on Spark against the same count "
                    "written as an order-ignorant Spark stateful query (transformWithStateInPandas), both on one "
                    "SparkSession and the same replayed input; reports the ratio of wall times (goal <= 1.5).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--events", type=int, default=20_000, metavar="N", help="number of events")
    p.add_argument("--keys", type=int, default=100, metavar="K", help="number of distinct keys")
    p.add_argument("--spacing-ms", type=int, default=10, metavar="MS",
                   help="event-time distance between consecutive events (10 ms: a delay of 1 s moves an event "
                        "about 100 places)")
    p.add_argument("--batch-rows", type=int, default=1000, metavar="R",
                   help="rows per micro-batch (the replay source's maxRowsPerBatch, for both queries)")
    p.add_argument("--percent", type=float, default=10.0, metavar="P", help="percent of events delayed")
    p.add_argument("--stddev-ms", type=non_negative_float, default=1000.0, metavar="D",
                   help="standard deviation of the delays |N(0, D)|")
    p.add_argument("--seed", type=int, default=0, help="random seed of keys and delays")
    p.add_argument("--repeat", type=int, default=2, help="measured runs of each query (alternating)")
    p.add_argument("--warmup-events", type=int, default=200, metavar="N", help="events of the warm-up runs (in about 4 micro-batches)")
    p.add_argument("--baseline", choices=BASELINES, default="key",
                   help="order-ignorant query groups by key (ValueState per key) or by shard (msgpack dict)")
    p.add_argument("--master", default="local[2]", help="Spark master URL")
    p.add_argument("--shards", type=int, default=2, help="shards of FlameSpark = Spark shuffle partitions")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE",
                   help="a Spark SQL setting applied to both queries (repeatable)")
    p.add_argument("--out", type=Path, metavar="FILE", help="write the report as JSON here")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    for name in ("events", "keys", "spacing_ms", "batch_rows", "repeat", "warmup_events", "shards"):
        if getattr(args, name) < 1:
            parser().error(f"--{name.replace('_', '-')} must be at least 1")
    if not 0 <= args.percent <= 100:
        parser().error("--percent must be between 0 and 100")
    if args.conf and any("=" not in setting for setting in args.conf):
        parser().error("--conf takes KEY=VALUE")
    args.warmup_events = min(args.warmup_events, args.events)
    report = benchmark(args)
    if args.out:
        write_atomic(args.out, json.dumps(report, indent=2) + "\n")
        _progress(f"report in {args.out}")
    print(table(report))
    return 0 if all(report["checks"].values()) else 1


if __name__ == "__main__":
    # Run the imported module, so that Spark workers unpickle its functions and classes by reference.
    from flamespark.overhead import main as _main

    sys.exit(_main())
