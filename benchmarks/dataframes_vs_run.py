"""A windowed count through `flamespark.spark.stream` against the same graph through `flamespark.run(engine="spark")`.

    python benchmarks/dataframes_vs_run.py                        # 1,000,000 events in 10 Parquet files
    python benchmarks/dataframes_vs_run.py --events 100000 --repeat 1 --out report.json

The graph counts each key's events per tumbling window (`--window-ms`,
1 s) with a reorder latency D (`--reorder-latency`, 256 ms), optimistic
mode. The input is benchmarks/windows_vs_spark.py's: `--events` events, one
a millisecond, of `--keys` keys drawn at random, `--percent` % of them
delayed by |N(0, `--stddev-ms`)| (flamespark's `disorder_pairs`), those left
more than D behind the newest one taken out (so neither side judges a late
event), and a last event far ahead, whose punctuation passes every window
of the others; here in arrival order in `--files` Parquet files of rows
`{ts, key}`. Both runs read that directory on one SparkSession (`--master`,
`local[2]`, `--shards` shuffle partitions), each as a user does:

- `run`: `flamespark.run(graph, {"events": DIRECTORY}, engine="spark")`,
  which reads it with Spark's file source and returns the Result;
- `stream`: `stream(graph, {"events": spark.readStream.parquet(DIRECTORY)},
  ...)` written by Spark's Parquet file sink (`trigger(availableNow=True)`).

Each takes all the files in one micro-batch. A run's wall time is from the
call (the `stream` call, for `stream`) to its outputs being in hand (the
Result, the sink's files read back); its CPU time is that of this process
and every process below it (Spark's JVM and Python workers), which other
work on a shared machine moves less. Runs alternate, `--repeat` of each,
so that a drift of the machine's speed reaches both; the report (`--out`)
has every run, the ratios stream / run of the medians (goal: wall <= 1.2)
and of each pair, where each query's time went (Spark's progress: the
batch's tasks, and in them each stateful operator's time on rows), and
whether both released the same windows (the far event's own left out: only
`run` knows the input ended). Timings depend on the machine and on what
else runs on it: compare figures of one run only.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from operator import itemgetter
from pathlib import Path

if not __package__:  # run as `python benchmarks/dataframes_vs_run.py`: this checkout's packages first
    import _checkout  # noqa: F401

from benchmarks.lib.script import run_script
from benchmarks.windows_vs_spark import make_input  # the same input
from flamespark.tools.arguments import (DefaultsHelpFormatter, non_negative_float, non_negative_int, percent,
                                        positive_int, report_file, spark_master)
from flamespark.tools.machine import machine

SOURCE, SINK = "events", "counts"


def count_graph(size: int):
    """Each key's events per tumbling window of `size` ms; a payload is a row `{"ts", "key"}`."""
    import flamespark as fs

    graph = fs.Graph("windowed_count")
    graph.source(SOURCE).tumbling_window(key=itemgetter("key"), size=size, name="per_key").count().sink(SINK)
    return graph


def write_input(directory: Path, args) -> dict:
    """The input of benchmarks/windows_vs_spark.py (one event a millisecond: its rate 1,000 events/s) as
    `args.files` Parquet files in arrival order; facts about it."""
    import pyarrow.json
    import pyarrow.parquet as pq

    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    lines = directory.parent / f"{directory.name}.jsonl"
    facts = make_input(lines, args.events / 1000, 1000.0, args.keys, args.percent, args.stddev_ms,
                       args.reorder_latency, args.window_ms, args.seed)
    table = pyarrow.json.read_json(lines)
    size = -(-len(table) // args.files)
    for number in range(args.files):
        pq.write_table(table.slice(number * size, size), directory / f"part-{number:03d}.parquet")
    lines.unlink()
    return facts


def through_run(spark, graph, directory: Path, work: Path, args) -> tuple:
    """`flamespark.run` on the Spark engine: its windows `{(key, start): count}` and where its micro-batches'
    time went (`batch_time`)."""
    import flamespark as fs

    shutil.rmtree(work, ignore_errors=True)
    result = fs.run(graph, {SOURCE: str(directory)}, engine="spark", spark=spark, reorder_latency=args.reorder_latency,
                    checkpoint=work, progress=False)
    windows = {(window["key"], window["start"]): window["value"] for window in result.outputs[SINK]}
    return windows, result.metrics["engine"]["batch_time"]


def through_stream(spark, graph, directory: Path, work: Path, args) -> tuple:
    """`flamespark.spark.stream` into Spark's Parquet file sink: its windows, and where its micro-batches' time
    went, under the names of `run`'s stages (the same two)."""
    from flamespark.engines.spark.batch_time import batch_time
    from flamespark.engines.spark.topology import INGEST_STAGE
    from flamespark.spark import payloads, stream

    shutil.rmtree(work, ignore_errors=True)
    events = spark.readStream.schema("ts LONG, key LONG").parquet(str(directory))
    out = stream(graph, {SOURCE: events}, event_time="ts", reorder_latency=args.reorder_latency)
    query = (out.writeStream.format("parquet").option("checkpointLocation", str(work / "checkpoint"))
             .trigger(availableNow=True).start(str(work / "results")))
    query.awaitTermination()
    written = spark.read.schema(out.schema).parquet(str(work / "results"))
    windows = {(row.key, row.start): row.value
               for row in payloads(written, SINK, "key LONG, start LONG, value LONG").collect()}
    return windows, batch_time(query.recentProgress, [INGEST_STAGE, "1: per_key, barrier"])


def _descendants(pid: int) -> list:
    """The processes below `pid` (Linux's /proc; none elsewhere)."""
    found = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/children") as children:
                for child in map(int, children.read().split()):
                    found += [child, *_descendants(child)]
        except OSError:
            continue
    return found


def tree_cpu_s() -> float | None:
    """CPU seconds (user and system) used so far by this process and every process below it: Spark's JVM and its
    Python workers, which the session's worker reuse keeps from run to run. Less moved by other work on a shared
    machine than wall time. None off Linux."""
    if not os.path.isdir("/proc/self/task"):
        return None
    tick, total = os.sysconf("SC_CLK_TCK"), 0.0
    for pid in [os.getpid(), *_descendants(os.getpid())]:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def measured(system, *arguments) -> dict:
    """`system(*arguments)` timed: its windows, its wall and CPU seconds (`tree_cpu_s`), its `batch_time`."""
    cpu, started = tree_cpu_s(), time.perf_counter()
    windows, spent = system(*arguments)
    wall_s, cpu_after = time.perf_counter() - started, tree_cpu_s()
    return {"windows": windows, "wall_s": wall_s, "cpu_s": None if cpu is None else cpu_after - cpu, "batch_time": spent}


def bench(args, say) -> dict:
    from flamespark.engines.spark.session import spark_session

    out_dir = args.out.parent
    directory, work = out_dir / "dataframes_vs_run-input", out_dir / "dataframes_vs_run-work"
    facts = write_input(directory, args)
    say(f"dataframes_vs_run: {facts['events']:,} events in {args.files} files in {directory} "
        f"({facts['removed_as_late']} taken out as late); Spark {args.master} starting ...")
    spark = spark_session(args.master, args.shards)
    graph = count_graph(args.window_ms)
    systems = {"run": through_run, "stream": through_stream}
    if args.warmup_events:
        warm = out_dir / "dataframes_vs_run-warm-up"
        warm_args = argparse.Namespace(**{**vars(args), "events": args.warmup_events, "files": 2})
        write_input(warm, warm_args)
        for name, system in systems.items():
            say(f"dataframes_vs_run: warm-up of {name} on {args.warmup_events:,} events ...")
            system(spark, graph, warm, work / f"warm-up-{name}", warm_args)
    runs = {name: [] for name in systems}
    for repeat in range(args.repeat):
        for name, system in systems.items():
            say(f"dataframes_vs_run: {name}, run {repeat + 1} of {args.repeat} ...")
            runs[name].append(measured(system, spark, graph, directory, work / name, args))
            say(f"dataframes_vs_run: {name} took {runs[name][-1]['wall_s']:.1f} s")
    final = {name: {window: count for window, count in of_system[-1].pop("windows").items()
                    if window[1] + args.window_ms <= facts["far_ts"]} for name, of_system in runs.items()}
    for of_system in runs.values():
        for run in of_system:
            run.pop("windows", None)
    return {
        "runs": runs, "ratios": ratios(runs), "windows": len(final["run"]), "equal": final["run"] == final["stream"],
        "setup": {key: value for key, value in vars(args).items() if key != "out"} | facts, "machine": machine(),
    }


def ratios(runs: dict) -> dict:
    """stream / run of the median wall and CPU seconds, and of each pair of runs (one of each, in turn).

    >>> ratios({"run": [{"wall_s": 10, "cpu_s": 8}, {"wall_s": 12, "cpu_s": 9}],
    ...         "stream": [{"wall_s": 11, "cpu_s": 8}, {"wall_s": 15, "cpu_s": 9}]})
    {'wall': 1.1818181818181819, 'cpu': 1.0, 'wall_pairs': [1.1, 1.25]}
    """
    def median(name, figure):
        values = [run[figure] for run in runs[name]]
        return None if None in values else statistics.median(values)

    cpu = (median("stream", "cpu_s"), median("run", "cpu_s"))
    return {"wall": median("stream", "wall_s") / median("run", "wall_s"),
            "cpu": None if None in cpu else cpu[0] / cpu[1],
            "wall_pairs": [b["wall_s"] / a["wall_s"] for a, b in zip(runs["run"], runs["stream"])]}


def table(report: dict) -> str:
    """Each system's median wall and CPU seconds, and where its median micro-batch went by Spark's progress (ms):
    its tasks (`addBatch`), and in them each stateful operator's time on rows, summed over its tasks."""
    def median(values):
        values = [value for value in values if value is not None]
        return statistics.median(values) if values else float("nan")

    stages = [stage["stage"] for stage in next(iter(report["runs"].values()))[0]["batch_time"]["stages"]]
    lines = [f"{'system':<7} {'wall s':>7} {'cpu s':>7} {'tasks ms':>9}" + "".join(f" {name[:20]:>21}" for name in stages)]
    for name, runs in report["runs"].items():
        cells = [median(run["wall_s"] for run in runs), median(run["cpu_s"] for run in runs)]
        line = f"{name:<7} {cells[0]:>7.1f} {cells[1]:>7.1f} "
        line += f"{median(run['batch_time']['driver_ms']['addBatch'] for run in runs):>9,.0f}"
        for index in range(len(stages)):
            line += f" {median(run['batch_time']['stages'][index]['rows_ms'] for run in runs):>21,.0f}"
        lines.append(line)
    found = report["ratios"]
    pairs = ", ".join(f"{ratio:.2f}" for ratio in found["wall_pairs"])
    cpu = "-" if found["cpu"] is None else f"{found['cpu']:.2f}"
    lines.append(f"stream / run: wall {found['wall']:.2f} (pairs {pairs}; goal <= 1.2), CPU {cpu}; "
                 f"{report['windows']:,} windows, equal: {report['equal']}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchmarks/dataframes_vs_run.py", description=__doc__.split("\n\n")[0],
                                     epilog="See the module's docstring for what is measured and how.",
                                     formatter_class=DefaultsHelpFormatter)
    parser.add_argument("--events", type=positive_int, default=1_000_000, help="events, one a millisecond")
    parser.add_argument("--files", type=positive_int, default=10, help="Parquet files they are written in")
    parser.add_argument("--keys", type=positive_int, default=100, help="distinct keys")
    parser.add_argument("--window-ms", type=positive_int, default=1000, help="tumbling window size")
    parser.add_argument("--reorder-latency", type=non_negative_int, default=256, help="D, ms")
    parser.add_argument("--percent", type=percent, default=30.0, help="share of the events delayed, in %%")
    parser.add_argument("--stddev-ms", type=non_negative_float, default=64.0, metavar="MS",
                        help="the delays' standard deviation: a delayed event's delay is |N(0, MS)| ms")
    parser.add_argument("--master", type=spark_master, default="local[2]", help="Spark master URL")
    parser.add_argument("--shards", type=positive_int, default=2, help="Spark's shuffle partitions")
    parser.add_argument("--repeat", type=positive_int, default=3, help="runs of each, alternating")
    parser.add_argument("--warmup-events", type=non_negative_int, default=20_000,
                        help="events each first runs on, to warm the JVM and the Python workers up (0: none)")
    parser.add_argument("--seed", type=non_negative_int, default=1)
    parser.add_argument("--out", type=report_file, default=Path("dataframes_vs_run.json"),
                        help="the JSON report; the input and the runs' directories go next to it")
    return parser


def command(args) -> int:
    say = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    report = bench(args, say)
    print(table(report))
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    say(f"dataframes_vs_run: report in {args.out}")
    return 0 if report["equal"] else 1


if __name__ == "__main__":
    sys.exit(run_script(build_parser(), command))
