"""FlameSpark's tumbling-window count on Spark against Spark's own windowed aggregation, same input, same rate.

    python benchmarks/windows_vs_spark.py                       # 60 s of input at 2,000 events/s
    python benchmarks/windows_vs_spark.py --seconds 10 --rate 500 --out report.json
    python benchmarks/windows_vs_spark.py --unpaced               # 1,000,000 events, as fast as each goes

Both run on Spark (`--master`, default `local[2]`) over the same events,
offered at the same rate by the same replay source (flamespark's, which
stamps each event with the moment it became due: its arrival):

- `flamespark`: `tumbling_window(key, size).count()` on the Spark engine,
  optimistic mode, reorder latency D, with its changelog (early results);
- `spark_native`: `withWatermark(time, D)` and `groupBy(window(time, size),
  key).count()` in append mode, the query a Spark user writes.

The input (`--seconds` of it at `--rate` events/s, written to a JSONL file
next to the report) has `--keys` keys drawn at random, and `--percent` % of
the events delayed by |N(0, `--stddev-ms`)| (flamespark's `disorder_pairs`);
an event that this leaves more than D behind the newest one is taken out, so
that neither system has a late event to judge (they judge them differently:
FlameSpark per event, Spark per micro-batch). The input ends with an event
far ahead, so that Spark's watermark passes the last windows too (Spark's
append mode emits a window only once its watermark has passed it); the far
event's own window is left out of the comparison.

A window `[start, end)` can be closed as soon as an event with
`ts >= end + D` has arrived; a result's latency is from the arrival of the
first such event to the result's release (FlameSpark: when its batch's output
file was written; Spark: when its `foreachBatch` had the batch's rows). An
event's arrival is the replay clock's: the clock starts with the second
micro-batch (the first carries one event), which Spark's checkpoint stamps
(`offsets/1`, `batchTimestampMs`); each system's own clock is read from its
own checkpoint. (Checked once against the arrivals the replay source stamped
on FlameSpark's results: the stamp was 3 ms after the clock's start, so the
latencies here are short of the truth by a few ms, alike for both.) The report (`--out`) holds, per system, events/s (from the
second micro-batch on), latency p50 and p99, the median micro-batch, and
FlameSpark's speculative p50 (the changelog's latency of early results), and
whether both released the same counts. Timings depend on the machine and on
what else runs on it.

`--unpaced` times throughput instead: `--events` events of the local
benchmark's disordered input (`benchmarks/windows_local.py`; those more than D
behind taken out, the far event added, as above), each system in a fresh
process, its wall time from before its Spark session starts to its last
result, reading the input included. Spark's own query reads the events as
`--files` JSON files, one a micro-batch (`maxFilesPerTrigger=1`, trigger
`availableNow`); FlameSpark reads the same events from one JSONL file, in as
many micro-batches (`max_rows_per_batch`). The systems alternate for
`--rounds` rounds; the report has each round's time, the best of each and
their ratio, and whether their counts are equal.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from bisect import bisect_left
from itertools import accumulate
from pathlib import Path

import numpy as np

if not __package__:  # run as `python benchmarks/windows_vs_spark.py`: this checkout's packages first
    import _checkout  # noqa: F401

from benchmarks.lib.measure import in_child
from benchmarks.windows_local import SINK, SOURCE, count_graph  # the same query as the local benchmark's
from flamespark.tools.arguments import (DefaultsHelpFormatter, non_negative_float, non_negative_int, percent,
                                      positive_float, positive_int, spark_master)
from flamespark.core.codec import pack
from flamespark.io.inputs import read_input
from flamespark.runtime.metrics import percentiles
from flamespark.tools.bench import processed_per_s
from flamespark.tools.disorder import disorder_pairs
from flamespark.tools.machine import machine


# --- the input -----------------------------------------------------------------------------------------------

def make_input(path: Path, seconds: float, rate: float, keys: int, percent_late: float, stddev_ms: float,
               reorder_latency: int, size: int, seed: int) -> dict:
    """Write the input as JSONL `{"ts", "key"}` in arrival order; returns facts about it.

    Event time runs at the offered rate (`rate` events a second of event
    time), so event time and arrival time keep pace.
    """
    count = int(seconds * rate)
    stamps = (np.arange(count) * 1000 // rate).astype(np.int64).tolist()
    drawn = np.random.default_rng(seed).integers(0, keys, count).tolist()
    arrival = disorder_pairs(list(zip(stamps, drawn)), percent_late, stddev_ms, seed)
    kept, facts = without_late(arrival, reorder_latency, size)
    write_events(path, kept)
    return facts


def without_late(arrival: list, reorder_latency: int, size: int) -> tuple[list, dict]:
    """The events `(ts, key)` of `arrival` that are at most `reorder_latency` behind the newest before them, and
    an event far ahead, which closes the last windows; with facts about them.

    >>> without_late([(0, 1), (900, 2), (500, 3), (950, 4)], 256, 1000)
    ([(0, 1), (900, 2), (950, 4), (11206, 0)], {'events': 4, 'removed_as_late': 1, 'far_ts': 11206})
    """
    kept, newest = [], None
    for ts, key in arrival:
        if newest is None or ts >= newest - reorder_latency:
            kept.append((ts, key))
            newest = ts if newest is None else max(newest, ts)
    far = max(ts for ts, _ in kept) + 10 * size + reorder_latency
    kept.append((far, 0))
    return kept, {"events": len(kept), "removed_as_late": len(arrival) + 1 - len(kept), "far_ts": far}


def write_events(path: Path, pairs) -> None:
    """`pairs` `(ts, key)` as JSONL `{"ts", "key"}`."""
    with open(path, "w") as out:
        out.writelines(f'{{"ts": {ts}, "key": {key}}}\n' for ts, key in pairs)


def keyed_pairs(path: Path) -> list:
    """The input file's events as `(ts, key)`: both systems read these, replayed from identical files."""
    return [(ts, event["key"]) for ts, event in read_input(SOURCE, path)]


def closing_positions(pairs: list, ends, reorder_latency: int) -> dict:
    """For each window end, the arrival position of the first event with `ts >= end + reorder_latency`.

    >>> closing_positions([(0, 1), (1300, 1), (1200, 2), (2400, 1)], [1000, 2000], 256)
    {1000: 1, 2000: 3}
    """
    newest = list(accumulate((ts for ts, _ in pairs), max))
    return {end: bisect_left(newest, end + reorder_latency) for end in ends}


# --- the two systems ------------------------------------------------------------------------------------------

def clock_anchor(checkpoint: Path) -> float:
    """When the replay clock started (s since the epoch): the second micro-batch's timestamp in Spark's
    offset log (a header line, then the batch's metadata as JSON)."""
    metadata = (checkpoint / "offsets" / "1").read_text().splitlines()[1]
    return json.loads(metadata)["batchTimestampMs"] / 1000


def run_flamespark(spark, pairs: list, workdir: Path, rate: float, size: int, reorder_latency: int,
                   max_rows: int | None = None) -> dict:
    """FlameSpark on the Spark engine; its releases `{(key, start): (count, released_at)}` from its output
    files, whose modification time is when their batch ended."""
    import flamespark as fs

    shutil.rmtree(workdir, ignore_errors=True)
    result = fs.run(count_graph(size), {SOURCE: pairs}, engine="spark", spark=spark, rate=rate,
                    reorder_latency=reorder_latency, changes=True, output=workdir / "output",
                    checkpoint=workdir / "run", max_rows_per_batch=max_rows, progress=False)
    releases = {}
    for batch in sorted((workdir / "output" / SINK).glob("batch-*")):
        released_at = batch.stat().st_mtime
        for line in batch.read_text().splitlines():
            window = json.loads(line)
            releases[window["key"], window["start"]] = (window["value"], window["end"], released_at)
    metrics = result.metrics
    return {"releases": releases, "anchor": clock_anchor(workdir / "run" / "checkpoint") if rate else None,
            "events_per_s": processed_per_s(metrics) if rate else metrics["events_per_s"],
            "batch_ms_p50": metrics["engine"]["batch_duration_ms"]["p50"],
            "batches": metrics["engine"]["batches"],
            "speculative_latency_ms": percentiles(result.speculative_latencies_ms),
            "late": len(result.late)}


class NativeReleases:
    """The native query's `foreachBatch`: each batch's windows and when the driver had them."""

    def __init__(self):
        self.releases = {}

    def __call__(self, frame, batch_id):
        rows = frame.collect()
        released_at = time.time()
        for row in rows:
            self.releases[row.key, row.start] = (row["count"], row.end, released_at)


def run_native(spark, pairs: list, workdir: Path, rate: float, size: int, reorder_latency: int,
               max_rows: int | None = None) -> dict:
    """Spark's own windowed count over a replay of the same events at the same rate."""
    from pyspark.sql import functions as F

    from flamespark.engines.spark.replay import ReplaySource, write_replay_file
    from flamespark.engines.spark.rows import EVENT

    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    replay = workdir / "events.msgpack"
    write_replay_file(replay, ((ts, pack(key)) for ts, key in pairs))  # as the Spark engine writes its input
    spark.dataSource.register(ReplaySource)
    reader = spark.readStream.format(ReplaySource.name()).option("path", str(replay)).option("source", SOURCE)
    if rate:
        reader = reader.option("rate", str(rate))
    if max_rows:
        reader = reader.option("maxRowsPerBatch", str(max_rows))
    events = reader.load().where(F.col("kind") == EVENT).select(
        F.timestamp_millis("ts").alias("time"),
        # The payload is the key packed by msgpack: a number below 128 packs as the one byte that is its value.
        F.conv(F.hex("payload"), 16, 10).cast("int").alias("key"))
    counts = (events.withWatermark("time", f"{reorder_latency} milliseconds")
              .groupBy(F.window("time", f"{size} milliseconds"), "key").count()
              .select("key", F.unix_millis("window.start").alias("start"), F.unix_millis("window.end").alias("end"),
                      "count"))
    collector = NativeReleases()
    started = time.perf_counter()
    query = (counts.writeStream.outputMode("append").foreachBatch(collector)
             .option("checkpointLocation", str(workdir / "checkpoint")).trigger(availableNow=True)
             .queryName("spark_native_windowed_count").start())
    query.awaitTermination()
    wall_s = time.perf_counter() - started
    progress = query.recentProgress
    return {"releases": collector.releases, "anchor": clock_anchor(workdir / "checkpoint") if rate else None,
            "events_per_s": native_events_per_s(progress) if rate else len(pairs) / wall_s,
            "batch_ms_p50": statistics.median(p["durationMs"]["triggerExecution"] for p in progress),
            "batches": len(progress)}


def native_events_per_s(progress: list) -> float | None:
    """Input rows from the second micro-batch on, over the time from its start to the last batch's end (as
    `flamespark.tools.bench.processed_per_s` counts FlameSpark's)."""
    from datetime import datetime

    def start(entry):
        return datetime.fromisoformat(entry["timestamp"].replace("Z", "+00:00")).timestamp()

    later = [entry for entry in progress if entry["batchId"] >= 1]
    if not later:
        return None
    span = max(start(entry) + entry["durationMs"]["triggerExecution"] / 1000 for entry in later) - start(later[0])
    return sum(entry["numInputRows"] for entry in later) / span


# --- unpaced: each system in a fresh process, its session's start included ------------------------------------

def unpaced_flamespark(input_path: Path, workdir: Path, master: str, shards: int, size: int, reorder_latency: int,
                       batches: int) -> dict:
    """FlameSpark's count over the JSONL input in `batches` micro-batches; wall time from before the session."""
    import flamespark as fs
    from flamespark.engines.spark.session import spark_session

    shutil.rmtree(workdir, ignore_errors=True)
    started = time.perf_counter()
    spark = spark_session(master, shards)
    pairs = keyed_pairs(input_path)
    result = fs.run(count_graph(size), {SOURCE: pairs}, engine="spark", spark=spark, reorder_latency=reorder_latency,
                    output=workdir / "output", checkpoint=workdir / "run",
                    max_rows_per_batch=-(-len(pairs) // batches), progress=False)
    wall_s = time.perf_counter() - started
    counts = {(window["key"], window["start"]): (window["value"], window["end"])
              for window in result.outputs[SINK]}
    return {"wall_s": wall_s, "batches": result.metrics["engine"]["batches"], "counts": counts}


def unpaced_native(parts: Path, workdir: Path, master: str, shards: int, size: int, reorder_latency: int) -> dict:
    """Spark's own count over the JSON files in `parts`, one a micro-batch; wall time from before the session."""
    from pyspark.sql import functions as F

    from flamespark.engines.spark.session import spark_session

    shutil.rmtree(workdir, ignore_errors=True)
    started = time.perf_counter()
    spark = spark_session(master, shards)
    events = (spark.readStream.schema("ts LONG, key INT").option("maxFilesPerTrigger", 1).json(str(parts))
              .select(F.timestamp_millis("ts").alias("time"), "key"))
    counts = (events.withWatermark("time", f"{reorder_latency} milliseconds")
              .groupBy(F.window("time", f"{size} milliseconds"), "key").count()
              .select("key", F.unix_millis("window.start").alias("start"), F.unix_millis("window.end").alias("end"),
                      "count"))
    collector = NativeReleases()
    query = (counts.writeStream.outputMode("append").foreachBatch(collector)
             .option("checkpointLocation", str(workdir / "checkpoint")).trigger(availableNow=True)
             .queryName("spark_native_unpaced_count").start())
    query.awaitTermination()
    wall_s = time.perf_counter() - started
    counts = {window: (count, end) for window, (count, end, _) in collector.releases.items()}
    return {"wall_s": wall_s, "batches": len(query.recentProgress), "counts": counts}


def bench_unpaced(args, say=print) -> dict:
    """The `--unpaced` runs of the module's docstring; the report."""
    from benchmarks.windows_local import arrival

    out_dir = args.out.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    kept, facts = without_late(arrival(args.events, args.keys, args.seed, args.percent, args.stddev_ms),
                               args.reorder_latency, args.window_ms)
    input_path, parts = out_dir / "windows_vs_spark-input.jsonl", out_dir / "windows_vs_spark-parts"
    write_events(input_path, kept)
    shutil.rmtree(parts, ignore_errors=True)
    parts.mkdir()
    share = -(-len(kept) // args.files)
    for part in range(args.files):
        write_events(parts / f"part-{part:03}.json", kept[part * share:(part + 1) * share])
    say(f"windows_vs_spark: {facts['events']:,} events in {input_path} and in {args.files} files in {parts} "
        f"({facts['removed_as_late']} taken out as late)")
    workdir = out_dir / "windows_vs_spark-work"
    walls, batches, counts = {"flamespark": [], "spark_native": []}, {}, {}
    for round_ in range(1, args.rounds + 1):
        for name in walls:
            say(f"windows_vs_spark: round {round_} of {args.rounds}, {name}, unpaced, in a fresh process ...")
            if name == "flamespark":
                run = in_child(unpaced_flamespark, input_path, workdir / name, args.master, args.shards,
                               args.window_ms, args.reorder_latency, args.files)
            else:
                run = in_child(unpaced_native, parts, workdir / name, args.master, args.shards, args.window_ms,
                               args.reorder_latency)
            walls[name].append(run["wall_s"])
            batches[name] = run["batches"]
            counts[name] = {window: value for window, value in run["counts"].items() if value[1] <= facts["far_ts"]}
            say(f"windows_vs_spark: {name} took {run['wall_s']:.1f} s in {run['batches']} micro-batches")
    report = {name: {"wall_s": times, "best_wall_s": min(times), "batches": batches[name],
                     "windows": len(counts[name])} for name, times in walls.items()}
    report["flamespark_to_native"] = report["flamespark"]["best_wall_s"] / report["spark_native"]["best_wall_s"]
    report["equal"] = counts["flamespark"] == counts["spark_native"]
    report["setup"] = {"master": args.master, "shards": args.shards, "files": args.files, "rounds": args.rounds,
                       "keys": args.keys, "window_ms": args.window_ms, "reorder_latency_ms": args.reorder_latency,
                       "percent_late": args.percent, "stddev_ms": args.stddev_ms, "seed": args.seed, **facts}
    report["machine"] = machine()
    return report


def unpaced_table(report: dict) -> str:
    lines = [f"{'system':<13} {'best wall s':>11} {'rounds (s)':<20} {'batches':>7} {'windows':>7}"]
    for name in ("flamespark", "spark_native"):
        run = report[name]
        rounds = ", ".join(f"{wall:.1f}" for wall in run["wall_s"])
        lines.append(f"{name:<13} {run['best_wall_s']:>11.1f} {rounds:<20} {run['batches']:>7} {run['windows']:>7}")
    lines.append(f"FlameSpark / Spark's own (best wall time): {report['flamespark_to_native']:.2f}")
    lines.append(f"equal counts: {report['equal']}")
    return "\n".join(lines)


# --- the report ----------------------------------------------------------------------------------------------

def window_latencies_ms(run: dict, pairs: list, rate: float, reorder_latency: int, far_ts: int) -> list:
    """Each released window's latency (ms) from the arrival of its closing event to its release; the far
    event's own window left out."""
    windows = {window: (end, released_at) for window, (_, end, released_at) in run["releases"].items()
               if end <= far_ts}
    closing = closing_positions(pairs, {end for end, _ in windows.values()}, reorder_latency)
    anchor = run["anchor"]
    # The first event (position 0) comes with the first batch, before the clock starts; position p >= 1 is due
    # (p - 1) / rate after the clock's start.
    return [(released_at - (anchor + (closing[end] - 1) / rate)) * 1000 for end, released_at in windows.values()]


def counts_of(run: dict, far_ts: int) -> dict:
    return {window: count for window, (count, end, _) in run["releases"].items() if end <= far_ts}


def summary(run: dict, latencies: list) -> dict:
    shown = percentiles(latencies)
    return {"events_per_s": run["events_per_s"], "latency_ms": {"p50": shown["p50"], "p99": shown["p99"]},
            "batch_ms_p50": run["batch_ms_p50"], "batches": run["batches"], "windows": len(latencies)}


def bench(args, say=print) -> dict:
    from flamespark.engines.spark.session import spark_session

    out_dir = args.out.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    input_path = out_dir / "windows_vs_spark-input.jsonl"
    facts = make_input(input_path, args.seconds, args.rate, args.keys, args.percent, args.stddev_ms,
                       args.reorder_latency, args.window_ms, args.seed)
    pairs = keyed_pairs(input_path)
    say(f"windows_vs_spark: {facts['events']:,} events in {input_path} ({facts['removed_as_late']} taken out as "
        f"late); Spark {args.master} starting ...")
    spark = spark_session(args.master, args.shards)
    # The replay clock's start is read from the offset log's second batch (`clock_anchor`): keep every entry, as
    # Spark otherwise purges all but the last 100 and a run on a quick machine has more batches than that.
    spark.conf.set("spark.sql.streaming.minBatchesToRetain", "1000000")
    workdir = out_dir / "windows_vs_spark-work"
    systems = {"flamespark": run_flamespark, "spark_native": run_native}
    if args.warmup_events:
        for name, run in systems.items():
            say(f"windows_vs_spark: warm-up of {name} on {args.warmup_events} events, unpaced ...")
            run(spark, pairs[:args.warmup_events], workdir / f"warm-up-{name}", None, args.window_ms,
                args.reorder_latency, max_rows=100)
    runs = {}
    for name, run in systems.items():
        say(f"windows_vs_spark: {name} at {args.rate:g} events/s ...")
        runs[name] = run(spark, pairs, workdir / name, args.rate, args.window_ms, args.reorder_latency)
    report = {name: summary(run, window_latencies_ms(run, pairs, args.rate, args.reorder_latency, facts["far_ts"]))
              for name, run in runs.items()}
    fs_run = runs["flamespark"]
    report["flamespark"]["speculative_latency_ms"] = {"p50": fs_run["speculative_latency_ms"]["p50"]}
    report["flamespark"]["late"] = fs_run["late"]
    fs_counts, native_counts = (counts_of(runs[name], facts["far_ts"]) for name in systems)
    report["equal"] = fs_counts == native_counts
    if not report["equal"]:
        report["differing_windows"] = sum(fs_counts.get(w) != native_counts.get(w)
                                          for w in set(fs_counts) | set(native_counts))
    report["setup"] = {"master": args.master, "shards": args.shards, "rate": args.rate, "seconds": args.seconds,
                       "keys": args.keys, "window_ms": args.window_ms, "reorder_latency_ms": args.reorder_latency,
                       "percent_late": args.percent, "stddev_ms": args.stddev_ms, "seed": args.seed,
                       "warmup_events": args.warmup_events, **facts}
    report["machine"] = machine()
    return report


def table(report: dict) -> str:
    lines = [f"{'system':<13} {'events/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'spec. p50':>9} {'batch p50':>9} "
             f"{'batches':>7} {'windows':>7}"]
    for name in ("flamespark", "spark_native"):
        run = report[name]
        speculative = run.get("speculative_latency_ms", {}).get("p50")
        lines.append(f"{name:<13} {_shown(run['events_per_s']):>9} {_shown(run['latency_ms']['p50']):>8} "
                     f"{_shown(run['latency_ms']['p99']):>8} {_shown(speculative):>9} "
                     f"{_shown(run['batch_ms_p50']):>9} {run['batches']:>7} {run['windows']:>7}")
    lines.append(f"equal counts: {report['equal']}")
    return "\n".join(lines)


def _shown(value) -> str:
    return "-" if value is None else f"{value:,.0f}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchmarks/windows_vs_spark.py", description=__doc__.split("\n\n")[0],
                                     epilog="See the module's docstring for what is measured and how.",
                                     formatter_class=DefaultsHelpFormatter)
    parser.add_argument("--seconds", type=positive_float, default=60.0, help="seconds of input at the rate")
    parser.add_argument("--rate", type=positive_float, default=2000.0, help="events offered a second")
    parser.add_argument("--keys", type=positive_int, default=100, help="distinct keys (at most 128)")
    parser.add_argument("--window-ms", type=positive_int, default=1000, help="tumbling window size")
    parser.add_argument("--reorder-latency", type=non_negative_int, default=256, help="D, ms: also Spark's "
                        "watermark delay")
    parser.add_argument("--percent", type=percent, default=30.0, help="share of the events delayed, in %%")
    parser.add_argument("--stddev-ms", type=non_negative_float, default=64.0, metavar="MS",
                        help="the delays' standard deviation: a delayed event's delay is |N(0, MS)| ms")
    parser.add_argument("--master", type=spark_master, default="local[2]", help="Spark master URL")
    parser.add_argument("--shards", type=positive_int, default=2, help="Spark's shuffle partitions")
    parser.add_argument("--warmup-events", type=non_negative_int, default=2000,
                        help="events each system first runs unpaced, to warm the JVM up (0: none)")
    parser.add_argument("--seed", type=non_negative_int, default=1)
    unpaced = parser.add_argument_group("unpaced mode")
    unpaced.add_argument("--unpaced", action="store_true",
                         help="time each system's wall time over --events events, unpaced (see the docstring)")
    unpaced.add_argument("--events", type=positive_int, default=1_000_000, help="events of the unpaced runs")
    unpaced.add_argument("--files", type=positive_int, default=10,
                         help="JSON files Spark's own query reads, one a micro-batch (FlameSpark: as many batches)")
    unpaced.add_argument("--rounds", type=positive_int, default=2, help="alternating rounds of the two systems")
    parser.add_argument("--out", type=Path, default=Path("windows_vs_spark.json"),
                        help="the JSON report; the input file and the runs' directories go next to it")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.keys > 128:
        parser.error("--keys: at most 128 (the native query reads a key as the one byte msgpack packs it in)")
    say = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    report = bench_unpaced(args, say) if args.unpaced else bench(args, say)
    print(unpaced_table(report) if args.unpaced else table(report))
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    say(f"windows_vs_spark: report in {args.out}")
    return 0 if report["equal"] else 1


if __name__ == "__main__":
    sys.exit(main())
