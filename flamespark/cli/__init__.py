"""The `flamespark` command. Each subcommand's options live in a module of its own here; the work is done by
`flamespark.tools`, whose functions take typed arguments."""
from __future__ import annotations

import argparse
import sys

from flamespark.cli import bench, disorder, graph, run
from flamespark.core.errors import FlameSparkError

COMMANDS = (run, disorder, graph, bench)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flamespark",
        description="Exact, low-latency processing of out-of-order event streams, optimistically, on Apache Spark.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except (FlameSparkError, OSError) as exc:  # an OSError names its file: a disk full, a directory unwritable
        print(f"flamespark: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("flamespark: interrupted", file=sys.stderr)
        return 130
