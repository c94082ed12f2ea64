"""The local engine's per-item cost against plain Python, and under load (see `benchmarks.lib.core_bench`).

    python benchmarks/core.py DOCS.jsonl [--repeat 3] [--out report.json]
"""
import argparse
import json
import sys
from pathlib import Path

if not __package__:  # run as `python benchmarks/core.py`: this checkout's packages first
    import _checkout  # noqa: F401

from benchmarks.lib.script import run_script
from flamespark.tools.arguments import non_negative_int, positive_float, positive_int, report_file
from flamespark.core.errors import InputError

# The benchmarks run from a checkout, where the examples sit beside them.
REPOSITORY = Path(__file__).resolve().parents[1]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchmarks/core.py",
        description="On one file of documents (the inverted index's input), in one run: the local engine "
                    "in order against the example's plain Python program (in_order_index) and the ratio of their "
                    "median times, wall and CPU, over --repeat alternating pairs; both modes paced at --rate "
                    "documents/s with 30% of the documents delayed by |N(0, 1000 ms)| and by "
                    "|N(0, 100 ms)|, and the first of these at --overload-rate, each in --repeat alternating pairs; "
                    "the running-sum example in order; what the changelog costs, and its speculative latency paced. "
                    "Each run has a process of its own, so its peak memory is its own.")
    parser.add_argument("docs", metavar="DOCS.jsonl", type=Path,
                        help="documents {ts, doc_id, text, ...}, e.g. from python -m flamespark.tools.wikipedia")
    parser.add_argument("--index-pipeline", metavar="PATH.py", type=Path,
                        default=REPOSITORY / "benchmarks" / "inverted_index_tuned.py",
                        help="an inverted-index pipeline, with its in_order_index (default: the checkout's "
                             "benchmarks/inverted_index_tuned.py)")
    parser.add_argument("--sum-pipeline", metavar="PATH.py", type=Path,
                        default=REPOSITORY / "examples" / "running_sum.py",
                        help="the running-sum example, with its readings() (default: the checkout's "
                             "examples/running_sum.py)")
    parser.add_argument("--reorder-latency", metavar="MS", type=non_negative_int, default=3000,
                        help="reorder latency of the document runs (default: %(default)s)")
    parser.add_argument("--rate", metavar="DOCS_PER_S", type=positive_float, default=20.0,
                        help="paced runs' offered rate (default: %(default)s)")
    parser.add_argument("--overload-rate", metavar="DOCS_PER_S", type=positive_float, default=200.0,
                        help="the overload run's offered rate (default: %(default)s)")
    parser.add_argument("--readings", metavar="N", type=positive_int, default=100_000,
                        help="running-sum readings (default: %(default)s)")
    parser.add_argument("--repeat", metavar="N", type=positive_int, default=3,
                        help="pairs of in-order runs (plain Python and the engine, alternating) and of runs "
                             "without and with the changelog, whose median wall and CPU times are compared; pairs of "
                             "paced runs (the optimistic and the buffered mode, alternating), whose median docs/s "
                             "are compared; running-sum runs and paced runs with the changelog, whose median "
                             "events/s and speculative latency are reported (default: %(default)s)")
    parser.add_argument("--changelog-rate", metavar="DOCS_PER_S", type=positive_float, default=10.0,
                        help="offered rate of the paced runs with the changelog, for its speculative latency "
                             "(default: %(default)s)")
    parser.add_argument("--out", metavar="FILE", type=report_file, help="also write the report as JSON here")
    return parser


def command(args) -> int:
    from benchmarks.lib.core_bench import bench_core, table
    from flamespark.io.atomic import write_atomic

    def say(text):
        print(f"core: {text}", file=sys.stderr, flush=True)

    for option, path in (("--index-pipeline", args.index_pipeline), ("--sum-pipeline", args.sum_pipeline)):
        if not path.is_file():
            raise InputError(f"{option} {path}: no such file")
    report = bench_core(args.docs, index_pipeline=args.index_pipeline, sum_pipeline=args.sum_pipeline,
                        reorder_latency=args.reorder_latency, rate=args.rate, overload_rate=args.overload_rate,
                        readings=args.readings, repeat=args.repeat, changelog_rate=args.changelog_rate, say=say)
    print(table(report), end="")
    if args.out:
        write_atomic(args.out, json.dumps(report, indent=2) + "\n")
    return 0


def main(argv=None) -> int:
    return run_script(build_parser(), command, argv)


if __name__ == "__main__":
    sys.exit(main())
