"""FlameSpark's running count on Spark against an order-ignorant Spark query (see `benchmarks.lib.overhead`).

    python benchmarks/overhead.py [--events N] [--keys K] [--repeat 2] [--out report.json]
"""
import argparse
import json
import sys

if not __package__:  # run as `python benchmarks/overhead.py`: this checkout's packages first
    import _checkout  # noqa: F401

from benchmarks.lib.overhead.settings import BASELINES, Settings
from benchmarks.lib.script import run_script
from flamespark.tools.arguments import (DefaultsHelpFormatter, non_negative_float, non_negative_int, percent,
                                      positive_int, report_file, spark_master)

DEFAULTS = Settings()


def spark_setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchmarks/overhead.py",
        description="Events/s of a per-key running count through FlameSpark on Spark against the same count "
                    "written as an order-ignorant Spark stateful query (transformWithStateInPandas), both on one "
                    "SparkSession and the same replayed input; prints the runs and the ratio of wall times "
                    "(goal <= 1.1). Exit status 1 if a check fails (outputs, micro-batches, late events).",
        formatter_class=DefaultsHelpFormatter)
    parser.add_argument("--events", type=positive_int, default=DEFAULTS.events, metavar="N", help="number of events")
    parser.add_argument("--keys", type=positive_int, default=DEFAULTS.keys, metavar="K", help="number of distinct keys")
    parser.add_argument("--spacing-ms", type=positive_int, default=DEFAULTS.spacing_ms, metavar="MS",
                        help="event-time distance between consecutive events (10 ms: a delay of 1 s moves an event "
                             "about 100 places)")
    parser.add_argument("--batch-rows", type=positive_int, default=DEFAULTS.batch_rows, metavar="R",
                        help="rows per micro-batch (the replay source's maxRowsPerBatch, for both queries)")
    parser.add_argument("--percent", type=percent, default=DEFAULTS.percent, metavar="P",
                        help="percent of events delayed")
    parser.add_argument("--stddev-ms", type=non_negative_float, default=DEFAULTS.stddev_ms, metavar="D",
                        help="standard deviation of the delays |N(0, D)|")
    parser.add_argument("--seed", type=non_negative_int, default=DEFAULTS.seed, help="random seed of keys and delays")
    parser.add_argument("--repeat", type=positive_int, default=DEFAULTS.repeat,
                        help="measured runs of each query (alternating)")
    parser.add_argument("--warmup-events", type=positive_int, default=DEFAULTS.warmup_events, metavar="N",
                        help="events of the warm-up runs (in about 4 micro-batches)")
    parser.add_argument("--baseline", choices=BASELINES, default=DEFAULTS.baseline,
                        help="order-ignorant query groups by key (ValueState per key) or by shard (msgpack dict)")
    parser.add_argument("--master", type=spark_master, default=DEFAULTS.master, help="Spark master URL")
    parser.add_argument("--shards", type=positive_int, default=DEFAULTS.shards,
                        help="shards of FlameSpark = Spark shuffle partitions")
    parser.add_argument("--conf", action="append", type=spark_setting, default=[], metavar="KEY=VALUE",
                        help="a Spark SQL setting applied to both queries (repeatable)")
    parser.add_argument("--out", metavar="FILE", type=report_file, help="write the report as JSON here")
    return parser


def command(args) -> int:
    from benchmarks.lib.overhead.benchmark import benchmark, say
    from benchmarks.lib.overhead.report import table
    from flamespark.io.atomic import write_atomic

    settings = Settings(events=args.events, keys=args.keys, spacing_ms=args.spacing_ms, percent=args.percent,
                        stddev_ms=args.stddev_ms, seed=args.seed, batch_rows=args.batch_rows, repeat=args.repeat,
                        warmup_events=args.warmup_events, baseline=args.baseline, master=args.master,
                        shards=args.shards, conf=tuple(args.conf))
    report = benchmark(settings)
    if args.out:
        write_atomic(args.out, json.dumps(report, indent=2) + "\n")
        say(f"report in {args.out}")
    print(table(report))
    return 0 if all(report["checks"].values()) else 1


def main(argv=None) -> int:
    return run_script(build_parser(), command, argv)


if __name__ == "__main__":
    sys.exit(main())
