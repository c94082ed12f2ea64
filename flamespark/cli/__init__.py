"""The `flamespark` command: run pipelines, disorder event files, show graphs."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from flamespark.runtime.progress import POLICIES
from flamespark.cli.arguments import non_negative_int, positive_float, positive_int
from flamespark.core.errors import FlameSparkError
from flamespark.runtime.plan import MODES
from flamespark.io.sinks import SINK_FORMATS


def _input_pair(text: str):
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=FILE, got {text!r}")
    return name, path


def add_run_arguments(parser: argparse.ArgumentParser):
    """Options shared by `run` and `bench`."""
    parser.add_argument("pipeline", metavar="PATH.py:ATTR", help="Python file and the Graph in it (ATTR defaults to 'graph')")
    parser.add_argument("--input", metavar="NAME=PATH", action="append", type=_input_pair, default=[], required=True,
                        help="events for source NAME: a JSONL file (one object per line with an integer 'ts'), or a "
                             "directory of such .jsonl files or of .parquet files with an integer column 'ts' "
                             "(Spark's file source; the local engine reads them in name order); repeat per source")
    parser.add_argument("--out", metavar="DIR", required=True, type=Path, help="output directory")
    parser.add_argument("--engine", choices=("spark", "local"), default="spark", help="where to run (default: spark)")
    parser.add_argument("--reorder-latency", metavar="MS", type=non_negative_int, default=0,
                        help="how far (ms) an event may arrive behind the newest one of its source (default: 0)")
    parser.add_argument("--late", choices=POLICIES, default="drop", help="late events: drop (dead-letter), adjust or fail")
    parser.add_argument("--rate", metavar="EVENTS_PER_S", type=positive_float,
                        help="replay JSONL file inputs at this rate (spark engine; default: as fast as possible)")
    parser.add_argument("--master", metavar="URL", default=None, help="Spark master URL (default: local[*])")
    parser.add_argument("--checkpoint", metavar="DIR", type=Path, default=None,
                        help="Spark checkpoint directory; rerun with the same one to resume (default: DIR/_checkpoint)")
    parser.add_argument("--max-rows-per-batch", metavar="N", type=positive_int, default=None,
                        help="replay at most N events of each JSONL file input in each Spark micro-batch, so batch "
                             "boundaries do not depend on timing (spark engine; default: all available)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flamespark",
        description="Exact, low-latency processing of out-of-order event streams, optimistically, on Apache Spark.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run a pipeline over JSONL or Parquet inputs",
                              description="Run a pipeline and write DIR/<sink>.jsonl (or .parquet), DIR/late.jsonl "
                                          "and DIR/metrics.json.")
    add_run_arguments(run)
    run.add_argument("--mode", choices=MODES, default="optimistic", help="optimistic (default) or the buffered baseline")
    run.add_argument("--sink-format", choices=SINK_FORMATS, default="jsonl",
                     help="file format of the sinks' outputs (default: jsonl); Parquet keeps dict payloads as columns")
    run.add_argument("--follow", action="store_true",
                     help="keep reading input directories for new files until interrupted (Ctrl-C stops cleanly; "
                          "rerun with the same --checkpoint to go on); each micro-batch's releases are written as "
                          "it ends, to DIR/<sink>/batch-N.<format> and DIR/late/ (spark engine)")
    run.add_argument("--idle-timeout", metavar="SECONDS", type=positive_float, default=None,
                     help="a source that delivers nothing for this long stops holding back the others' releases; "
                          "its later events behind them are late (spark engine; default: wait for every source)")
    run.set_defaults(handler=_run_command)

    from flamespark.tools.disorder import add_disorder_arguments, disorder_command

    disorder = commands.add_parser("disorder", help="delay a share of the events of a JSONL file",
                                   description="The Impatience paper's disorder generator: P%% of events are delayed "
                                               "by |N(0, D)| ms and the file is rewritten in arrival order.")
    add_disorder_arguments(disorder)
    disorder.set_defaults(handler=disorder_command)

    from flamespark.tools.bench import add_bench_arguments, bench_command

    bench = commands.add_parser("bench", help="compare the optimistic mode with the buffered baseline",
                                description="Run both modes on the same input (and, with --sweep, on re-disordered "
                                            "copies of it) and write DIR/report.json, DIR/report.md and plots.")
    add_bench_arguments(bench)
    bench.set_defaults(handler=bench_command)

    graph = commands.add_parser("graph", help="print a pipeline's logical graph as Graphviz DOT")
    graph.add_argument("pipeline", metavar="PATH.py:ATTR")
    graph.set_defaults(handler=_graph_command)
    return parser


def _graph_command(args) -> int:
    from flamespark.tools.loader import load_graph

    sys.stdout.write(load_graph(args.pipeline).to_dot())
    return 0


def _run_command(args) -> int:
    from flamespark.tools.runner import run_to_directory

    result = run_to_directory(args, mode=args.mode)
    metrics = result.metrics
    print(
        f"released {metrics['released']} record(s) from {metrics['events']} event(s) "
        f"(late {metrics['late_dropped'] + metrics['late_adjusted']}, replay ratio {metrics['replay_ratio']:.3f}); "
        f"outputs in {args.out}",
        file=sys.stderr,
    )
    return 0


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except FlameSparkError as exc:
        print(f"flamespark: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("flamespark: interrupted", file=sys.stderr)
        return 130


