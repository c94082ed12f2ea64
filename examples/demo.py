"""The quick start: the inverted index, optimistic against the buffered baseline, with early answers.

    python examples/demo.py                                          # 200 generated documents
    python examples/demo.py enwiki-latest-pages-articles1.xml.bz2    # the first 200 pages of a real dump

Makes the documents (the first `--docs` pages of the dump if one is given, else made-up ones
with Zipf word frequencies), spaced in event time as they are offered (`--rate` documents a
second, 10 by default, so 100 ms apart: event time keeps up with the clock, as in a live
stream), delays 30 % of them by |N(0, 1 s)|, runs `flamespark bench` on them with a reorder
latency of 3 s, and ends by printing where the report is and three median latencies: the early
(speculative) answer, the optimistic mode's final one and the buffered baseline's. A final
latency is the reorder latency (an output is final once a document 3 s later in event time,
so about 3 s later on the clock, has arrived), the micro-batch that releases it and the processing.
"""
import argparse
import sys
from itertools import islice
from pathlib import Path

from flamespark.tools.arguments import non_negative_int, percent, positive_float, positive_int
from flamespark.core.errors import FlameSparkError
from flamespark.runtime.options import ENGINES
from flamespark.tools.bench import bench, modes_agree
from flamespark.tools.bench_report import headline
from flamespark.tools.disorder import disorder_file
from flamespark.tools.loader import load_graph
from flamespark.tools.pace import real_time_interval_ms
from flamespark.tools.wikipedia import DumpError, iter_pages, synthetic_documents, write_events

PIPELINE = Path(__file__).resolve().parent / "inverted_index.py"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="demo.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("dump", nargs="?", metavar="DUMP",
                        help="a MediaWiki XML export (.xml, .xml.bz2 or .xml.gz); without one, documents are made up")
    parser.add_argument("--docs", metavar="N", type=positive_int, default=200,
                        help="how many documents: the first N pages of DUMP, or N made up (default: 200)")
    parser.add_argument("--out", metavar="DIR", type=Path, default=Path("demo"),
                        help="where the documents and the report go (default: demo)")
    parser.add_argument("--engine", choices=ENGINES, default="spark", help="where to run (default: spark)")
    parser.add_argument("--rate", metavar="DOCS_PER_S", type=positive_float, default=10.0,
                        help="documents offered a second, and so a second of event time (default: 10)")
    parser.add_argument("--percent", metavar="P", type=percent, default=30.0,
                        help="share of documents delayed, in %% (default: 30)")
    parser.add_argument("--reorder-latency", metavar="MS", type=non_negative_int, default=3000,
                        help="how far (ms) a document may arrive behind the newest one (default: 3000)")
    parser.add_argument("--seed", metavar="S", type=non_negative_int, default=1,
                        help="random seed of the delays (default: 1)")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    documents = islice(iter_pages(args.dump), args.docs) if args.dump else synthetic_documents(args.docs)
    in_order, arrival = args.out / "docs.jsonl", args.out / "docs-disordered.jsonl"
    try:
        interval_ms = real_time_interval_ms(args.rate)
        count = write_events(documents, in_order, interval_ms)
        print(f"demo: {count} documents from {args.dump or 'the generator'}, {interval_ms} ms apart in event time "
              f"to be offered {args.rate:g} a second; {args.percent:g} % of them delayed by |N(0, 1 s)|",
              file=sys.stderr)
        disorder_file(in_order, arrival, args.percent, 1000.0, args.seed)
        report = bench(load_graph(f"{PIPELINE}:graph"), {"docs": arrival}, args.out / "report", engine=args.engine,
                       reorder_latency=args.reorder_latency, rate=args.rate, title="examples/inverted_index.py:graph")
    except (DumpError, FlameSparkError, ValueError, OSError) as exc:
        print(f"demo: error: {exc}", file=sys.stderr)
        return 1
    equal = "equal" if modes_agree(report) else "DIFFERENT"
    print(f"demo: report in {args.out / 'report' / 'report.md'}; outputs {equal} in both modes; {headline(report)}")
    return 0 if modes_agree(report) else 1


if __name__ == "__main__":
    sys.exit(main())
