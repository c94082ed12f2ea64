"""`python -m flamespark.tools.overhead`: options, the run, the report file and the table."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from flamespark.cli.arguments import non_negative_float, percent, positive_int
from flamespark.io.atomic import write_atomic
from flamespark.tools.overhead.baseline import BASELINES
from flamespark.tools.overhead.benchmark import say, benchmark
from flamespark.tools.overhead.report import table


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m flamespark.tools.overhead",
        description="Events/s of a per-key running count through FlameSpark on Spark against the same count "
                    "written as an order-ignorant Spark stateful query (transformWithStateInPandas), both on one "
                    "SparkSession and the same replayed input; reports the ratio of wall times (goal <= 1.5).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--events", type=positive_int, default=20_000, metavar="N", help="number of events")
    p.add_argument("--keys", type=positive_int, default=100, metavar="K", help="number of distinct keys")
    p.add_argument("--spacing-ms", type=positive_int, default=10, metavar="MS",
                   help="event-time distance between consecutive events (10 ms: a delay of 1 s moves an event "
                        "about 100 places)")
    p.add_argument("--batch-rows", type=positive_int, default=1000, metavar="R",
                   help="rows per micro-batch (the replay source's maxRowsPerBatch, for both queries)")
    p.add_argument("--percent", type=percent, default=10.0, metavar="P", help="percent of events delayed")
    p.add_argument("--stddev-ms", type=non_negative_float, default=1000.0, metavar="D",
                   help="standard deviation of the delays |N(0, D)|")
    p.add_argument("--seed", type=int, default=0, help="random seed of keys and delays")
    p.add_argument("--repeat", type=positive_int, default=2, help="measured runs of each query (alternating)")
    p.add_argument("--warmup-events", type=positive_int, default=200, metavar="N",
                   help="events of the warm-up runs (in about 4 micro-batches)")
    p.add_argument("--baseline", choices=BASELINES, default="key",
                   help="order-ignorant query groups by key (ValueState per key) or by shard (msgpack dict)")
    p.add_argument("--master", default="local[2]", help="Spark master URL")
    p.add_argument("--shards", type=positive_int, default=2, help="shards of FlameSpark = Spark shuffle partitions")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE",
                   help="a Spark SQL setting applied to both queries (repeatable)")
    p.add_argument("--out", type=Path, metavar="FILE", help="write the report as JSON here")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.conf and any("=" not in setting for setting in args.conf):
        parser().error("--conf takes KEY=VALUE")
    args.warmup_events = min(args.warmup_events, args.events)
    report = benchmark(args)
    if args.out:
        write_atomic(args.out, json.dumps(report, indent=2) + "\n")
        say(f"report in {args.out}")
    print(table(report))
    return 0 if all(report["checks"].values()) else 1
