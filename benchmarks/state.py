"""Whether a micro-batch's cost on Spark grows with the state held (see `benchmarks.lib.state_bench`).

    python benchmarks/state.py [--events N] [--keys K] [--state-bytes B] [--out report.json]
"""
import argparse
import json
import sys

if not __package__:  # run as `python benchmarks/state.py`: this checkout's packages first
    import _checkout  # noqa: F401

from benchmarks.lib.script import run_script
from flamespark.tools.arguments import non_negative_int, positive_int, report_file, spark_master


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchmarks/state.py",
        description="A running count on Spark over N in-order events, each of a key of its own, a fixed number a "
                    "micro-batch: the state grows by one key an event while every batch brings the same rows. "
                    "Prints every batch's time (Spark's triggerExecution, and each stateful operator's update and "
                    "commit time and state rows), and the median batch time of the first and last third and their "
                    "ratio (goal <= 1.2). With --keys, the events cycle over that many keys, so each key's log holds "
                    "a step per event within the reorder latency.")
    parser.add_argument("--events", type=positive_int, default=30_000, metavar="N",
                        help="events, each of a key of its own unless --keys (default: %(default)s)")
    parser.add_argument("--keys", type=positive_int, metavar="K",
                        help="cycle the events over K keys (default: a key an event)")
    parser.add_argument("--state-bytes", type=non_negative_int, default=0, metavar="B",
                        help="bytes of state each key holds besides its count (default: %(default)s)")
    parser.add_argument("--batch-rows", type=positive_int, default=1000, metavar="R",
                        help="rows a micro-batch (default: %(default)s)")
    parser.add_argument("--spacing-ms", type=positive_int, default=10, metavar="MS",
                        help="event-time distance between consecutive events (default: %(default)s)")
    parser.add_argument("--reorder-latency", type=non_negative_int, default=1000, metavar="MS",
                        help="reorder latency (default: %(default)s)")
    parser.add_argument("--warmup-batches", type=non_negative_int, default=3, metavar="B",
                        help="batches of a warm-up run before the measured one (default: %(default)s)")
    parser.add_argument("--master", type=spark_master, default="local[2]",
                        help="Spark master URL (default: %(default)s)")
    parser.add_argument("--shards", type=positive_int, default=2,
                        help="shards = Spark shuffle partitions (default: %(default)s)")
    parser.add_argument("--out", metavar="FILE", type=report_file, help="also write the report as JSON here")
    return parser


def command(args) -> int:
    from benchmarks.lib.state_bench import state_bench, table
    from flamespark.io.atomic import write_atomic

    report = state_bench(args.events, args.state_bytes, batch_rows=args.batch_rows, spacing_ms=args.spacing_ms,
                         reorder_latency=args.reorder_latency, warmup_batches=args.warmup_batches,
                         master=args.master, shards=args.shards, keys=args.keys,
                         say=lambda text: print(f"state: {text}", file=sys.stderr, flush=True))
    print(table(report), end="")
    if args.out:
        write_atomic(args.out, json.dumps(report, indent=2) + "\n")
    return 0


def main(argv=None) -> int:
    return run_script(build_parser(), command, argv)


if __name__ == "__main__":
    sys.exit(main())
