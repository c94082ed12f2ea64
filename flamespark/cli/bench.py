"""`flamespark bench`: the optimistic mode against the buffered baseline on the same input."""
import argparse
import sys

from flamespark.tools.arguments import (comma_separated, non_negative_float, non_negative_int, percent, positive_float,
                                      spark_master)
from flamespark.cli.run import add_pipeline_arguments, run_options
from flamespark.tools.bench import WARM_UP_BATCH_ROWS, WARM_UP_EVENTS


def sweep_points(text: str) -> list:
    """`percent=P1,P2,...`: the disorder percents of a sweep."""
    name, sep, values = text.partition("=")
    if name != "percent" or not sep:
        raise argparse.ArgumentTypeError(f"expected percent=P1,P2,..., got {text!r}")
    try:
        return [percent(value) for value in values.split(",")]
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"percentages: {exc}") from None


def add_parser(commands):
    parser = commands.add_parser(
        "bench", help="compare the optimistic mode with the buffered baseline",
        description="Run both modes on the same input (and, with --sweep, on re-disordered copies of it; with "
                    "--rates, offered at several rates) and write DIR/report.json, DIR/report.md and plots. On "
                    "Spark, both modes first run once, unpaced and discarded, on the first events of each source "
                    f"(--warmup-events), {WARM_UP_BATCH_ROWS} a micro-batch, so that neither is measured on a "
                    "cold JVM. Exit status 1 if their outputs differ.")
    add_pipeline_arguments(parser)
    parser.add_argument("--sweep", metavar="percent=P1,P2,...", type=sweep_points, default=[],
                        help="also rerun both modes with P%% of the events (sorted by ts) delayed by |N(0, stddev)|")
    parser.add_argument("--stddev-ms", metavar="MS", type=non_negative_float, default=1000.0,
                        help="delay standard deviation of the sweep (default: 1000)")
    parser.add_argument("--seed", metavar="S", type=non_negative_int, default=0,
                        help="random seed of the sweep (default: 0)")
    parser.add_argument("--rates", metavar="R1,R2,...", type=comma_separated(positive_float), default=[],
                        help="also run both modes on the input offered at each rate (events/s): latency, events/s, "
                             "replay and batch length per rate, the highest rate each sustains, and rates.png")
    parser.add_argument("--scaling", metavar="MASTER1,MASTER2", type=comma_separated(spark_master), default=(),
                        help="also run the optimistic mode unpaced on each Spark master (e.g. local[1],local[2]), "
                             "each in a process of its own, and report the events/s of each and their ratio")
    parser.add_argument("--warmup-events", metavar="N", type=non_negative_int, default=None,
                        help=f"Spark only: events of each source in the warm-up runs (default: {WARM_UP_EVENTS}; "
                             "0: no warm-up)")
    parser.set_defaults(handler=command)


def command(args) -> int:
    from flamespark.tools.bench import bench, modes_agree
    from flamespark.tools.bench_report import headline
    from flamespark.tools.loader import load_graph

    report = bench(load_graph(args.pipeline), args.input, args.out, sweep=args.sweep, stddev_ms=args.stddev_ms,
                   seed=args.seed, rates=args.rates, title=args.pipeline, scaling=args.scaling,
                   pipeline=args.pipeline, warmup_events=args.warmup_events, **run_options(args))
    equal = modes_agree(report)
    slower = "; event time ran slower than the clock (see the warnings)" if report["pace_warnings"] else ""
    print(f"bench: report in {args.out / 'report.md'}; {headline(report)}{slower}"
          + ("" if equal else "; OUTPUTS DIFFER between modes"), file=sys.stderr)
    return 0 if equal else 1
