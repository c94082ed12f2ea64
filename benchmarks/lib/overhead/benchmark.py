"""Warm up, then run queries A and B alternately on one SparkSession."""
from __future__ import annotations

import math
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.lib.overhead.baseline import run_baseline, write_baseline_input
from benchmarks.lib.overhead.query_reports import QueryReportListener, summarize
from benchmarks.lib.overhead.report import make_report
from benchmarks.lib.overhead.settings import Settings
from benchmarks.lib.overhead.workload import FLAMESPARK_OPERATORS, make_events, max_lag, run_flamespark
from flamespark.engines.spark.session import spark_session
from flamespark.io.jsonl import write_jsonl

WARMUP_BATCHES = 4
QUERIES = ("flamespark", "baseline")


def say(text: str):
    """One line of progress on stderr."""
    print(f"overhead: {text}", file=sys.stderr, flush=True)


def _write_inputs(workdir: Path, name: str, events: list) -> tuple[Path, Path]:
    """`events` as FlameSpark's JSONL input and as the baseline's replay file."""
    jsonl, replay = workdir / f"{name}.jsonl", workdir / f"{name}.replay"
    write_jsonl(jsonl, events)
    write_baseline_input(replay, events)
    return jsonl, replay


def _run(query: str, spark, settings: Settings, listener, events: list, paths: tuple, batch_rows: int,
         reorder_latency: int) -> dict:
    """One summarised run of query A (`flamespark`) or B (`baseline`)."""
    jsonl, replay = paths
    if query == "flamespark":
        facts = run_flamespark(spark, jsonl, len(events), batch_rows, reorder_latency, settings.shards, listener)
        return summarize(facts, FLAMESPARK_OPERATORS)
    facts = run_baseline(spark, replay, len(events), batch_rows, settings.baseline, settings.shards, listener)
    return summarize(facts, [f"count by {settings.baseline}"])


def benchmark(settings: Settings = Settings(), spark=None) -> dict:
    """Warm up, run A and B alternately `settings.repeat` times, and return the report.

    Runs on `spark` if given, else on a session built from `settings.master` and `settings.shards`.
    """
    workdir = Path(tempfile.mkdtemp(prefix="flamespark-overhead-"))
    try:
        say(f"generating {settings.events:,} events over {settings.keys} keys "
            f"({settings.percent:g} % delayed by |N(0, {settings.stddev_ms:g} ms)|, ts every {settings.spacing_ms} ms)")
        events = make_events(settings.events, settings.keys, settings.spacing_ms, settings.percent, settings.stddev_ms,
                             settings.seed)
        reorder_latency = max_lag(events)
        measured = _write_inputs(workdir, "events", events)
        warm = events[: settings.warmup_events]
        warm_paths = _write_inputs(workdir, "warmup", warm)

        say(f"starting Spark ({settings.master}, {settings.shards} shuffle partitions)")
        started = time.perf_counter()
        spark = spark or spark_session(settings.master, settings.shards)
        session_s = time.perf_counter() - started
        for key, value in settings.conf:
            spark.conf.set(key, value)
        listener = QueryReportListener()
        spark.streams.addListener(listener)
        try:
            # Several micro-batches, so that the warm-up also runs the later-batch path (state to load).
            warm_rows = max(1, math.ceil(len(warm) / WARMUP_BATCHES))
            say(f"session ready in {session_s:.1f} s; warming up on {len(warm)} events, {warm_rows} a batch")
            warmup = [_run(query, spark, settings, listener, warm, warm_paths, warm_rows, max_lag(warm))
                      for query in QUERIES]
            say("warm-up: " + ", ".join(f"{w['query']} {w['wall_s']:.1f} s" for w in warmup))
            runs = []
            for index in range(1, settings.repeat + 1):
                pair = {"run": index}
                for query in QUERIES if index % 2 else QUERIES[::-1]:
                    say(f"run {index}/{settings.repeat}: {query} ...")
                    done = pair[query] = _run(query, spark, settings, listener, events, measured, settings.batch_rows,
                                              reorder_latency)
                    say(f"run {index}/{settings.repeat}: {query} {done['wall_s']:.1f} s, "
                        f"{done['events_per_s']:,.0f} events/s, {done['batches']} batches, {done['outputs']:,} outputs")
                pair["ratio"] = pair["flamespark"]["wall_s"] / pair["baseline"]["wall_s"]
                runs.append(pair)
        finally:
            spark.streams.removeListener(listener)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return make_report(settings, runs, warmup, reorder_latency, session_s)
