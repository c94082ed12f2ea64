"""Online sorters (Impatience, a heap, sort-then-merge) on out-of-order streams (see `benchmarks.lib.sorter_bench`).

    python benchmarks/sorters.py [--events N] [--frequencies 10,100,...] [--quick]
"""
import argparse
import sys

if not __package__:  # run as `python benchmarks/sorters.py`: this checkout's packages first
    import _checkout  # noqa: F401

from benchmarks.lib.script import run_script
from benchmarks.lib.sorter_bench import CLOCKS, METHODS, NO_REPEAT_SECONDS, WORKLOADS, Settings, format_table, run
from flamespark.tools.arguments import (DefaultsHelpFormatter, comma_separated, non_negative_float, non_negative_int,
                                      percent, positive_float, positive_int)

DEFAULTS = Settings()


def _listed(values) -> str:
    """A default for a comma-separated option, as typed (argparse parses string defaults with the option's type)."""
    return ",".join(map(str, values))


# What --quick changes, unless given: fewer events, each timing once.
QUICK = {"events": 100_000, "repeat": 1}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchmarks/sorters.py",
        description="Events/s of online sorters on out-of-order streams with punctuations: Impatience sort, a "
                    "heapq heap, and the paper's sort-then-merge buffers (sort+merge). A punctuation follows every "
                    "F events with T = (max ts seen) - (reorder latency); events with ts <= the previous T are late "
                    "and dropped before any sorter sees them. All methods get the same events and punctuations, and "
                    "each output is checked equal to a stable sort of the kept events.",
        epilog="Workloads: 'synthetic' has timestamps 0..N-1 in arrival order with p% of them moved back by "
               "|N(0, d)|; 'sources' has N events from --sources in-order sources, each lagging by a fixed random "
               "amount below --skew, interleaved at random. The reorder latency is the 99.99th percentile of how "
               "far events arrive behind the high-watermark. Table: buffered = mean number of events held "
               "(sampled after every push), late = dropped events, then events/s per method (best of --repeat; "
               f"timings over {NO_REPEAT_SECONDS:g} s are not repeated) and the speedup of Impatience over the "
               "best other method.",
        formatter_class=DefaultsHelpFormatter)
    parser.add_argument("--events", type=positive_int, default=argparse.SUPPRESS,
                        help=f"events per workload (default: {DEFAULTS.events:,}; with --quick {QUICK['events']:,})")
    parser.add_argument("--frequencies", type=comma_separated(positive_int), default=_listed(DEFAULTS.frequencies),
                        metavar="F1,F2,...", help="punctuation frequencies F (events between punctuations)")
    parser.add_argument("--seed", type=non_negative_int, default=DEFAULTS.seed, help="numpy seed")
    parser.add_argument("--quick", action="store_true",
                        help=f"sanity run: {QUICK['events']:,} events, timed once (--events and --repeat, if "
                             f"given, still count)")
    parser.add_argument("--repeat", type=positive_int, default=argparse.SUPPRESS,
                        help=f"timings per method and setting; the best counts (default: {DEFAULTS.repeat}; with "
                             f"--quick {QUICK['repeat']})")
    parser.add_argument("--workloads", type=comma_separated(str, WORKLOADS), default=_listed(DEFAULTS.workloads),
                        metavar="W1,W2", help="comma-separated, from: " + ", ".join(WORKLOADS))
    parser.add_argument("--methods", type=comma_separated(str, tuple(METHODS)), default=_listed(DEFAULTS.methods),
                        metavar="M1,M2,...", help="comma-separated, from: " + ", ".join(METHODS))
    parser.add_argument("-p", dest="percent", type=percent, default=DEFAULTS.percent,
                        help="synthetic: percentage of delayed events")
    parser.add_argument("-d", dest="stddev", type=non_negative_float, default=DEFAULTS.stddev,
                        help="synthetic: standard deviation of a delay")
    parser.add_argument("--sources", type=positive_int, default=DEFAULTS.sources, help="sources: number of sources")
    parser.add_argument("--skew", type=positive_int, default=DEFAULTS.skew,
                        help="sources: lags are drawn from [0, skew)")
    parser.add_argument("--burst", type=positive_float, default=DEFAULTS.burst,
                        help="sources: mean number of consecutive arrivals from one source")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default=DEFAULTS.clock,
                        help="cpu: this process's CPU time (steadier on a busy machine); wall: elapsed time")
    return parser


def command(args) -> int:
    sizes = QUICK if args.quick else {"events": DEFAULTS.events, "repeat": DEFAULTS.repeat}
    settings = Settings(events=getattr(args, "events", sizes["events"]),
                        repeat=getattr(args, "repeat", sizes["repeat"]),
                        frequencies=args.frequencies, seed=args.seed, workloads=args.workloads, methods=args.methods,
                        percent=args.percent, stddev=args.stddev, sources=args.sources, skew=args.skew,
                        burst=args.burst, clock=args.clock)
    rows = run(settings, say=lambda text: print(text, file=sys.stderr, flush=True))
    print(format_table(rows, settings))
    return 0


def main(argv=None) -> int:
    return run_script(build_parser(), command, argv)


if __name__ == "__main__":
    sys.exit(main())
