"""`flamespark disorder`: delay a share of the events of a JSONL file, as the Impatience paper does."""
import sys

from flamespark.tools.arguments import non_negative_float, non_negative_int, percent
from flamespark.tools.disorder import DEFAULT_PERCENT, DEFAULT_SEED, DEFAULT_STDDEV_MS, disorder_file


def add_parser(commands):
    parser = commands.add_parser(
        "disorder", help="delay a share of the events of a JSONL file",
        description="Make an in-order event stream out of order, as in the Impatience-sort paper (section VI-A): "
                    "P% of the events, chosen at random, arrive late by |N(0, D)| ms. Event times (\"ts\") are "
                    "unchanged; only the order of the lines changes. The defaults are the paper's.")
    parser.add_argument("input", metavar="IN",
                        help="JSONL events, one JSON object with an integer \"ts\" per line, sorted by ts")
    parser.add_argument("--out", "-o", required=True, metavar="OUT",
                        help="where to write the re-ordered JSONL (replaced atomically)")
    parser.add_argument("--percent", "-p", type=percent, default=DEFAULT_PERCENT, metavar="P",
                        help="percentage of events to delay, 0-100 (default: %(default)g)")
    parser.add_argument("--stddev-ms", "-d", type=non_negative_float, default=DEFAULT_STDDEV_MS, metavar="D",
                        help="standard deviation of the delay |N(0, D)| in ms (default: %(default)g)")
    parser.add_argument("--seed", type=non_negative_int, default=DEFAULT_SEED, metavar="S",
                        help="random seed (default: %(default)s)")
    parser.set_defaults(handler=command)


def command(args) -> int:
    try:
        summary = disorder_file(args.input, args.out, args.percent, args.stddev_ms, args.seed)
    except ValueError as exc:  # a malformed input file, named with its line
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot write {args.out}: {exc.strerror or exc}")
    n = summary["events"]
    share = 100.0 * summary["delayed"] / n if n else 0.0
    print(f"disorder: {n} events, {summary['delayed']} delayed ({share:.1f}%), "
          f"max delay {summary['max_delay_ms']:.1f} ms, {summary['inversions']} inversions, "
          f"{summary['runs']} runs -> {summary['output']}", file=sys.stderr)
    return 0


def _fail(message: str) -> int:
    print(f"flamespark: error: {message}", file=sys.stderr)
    return 1
