"""Latency against offered rate, both modes, each rate replayed in real time (docs/benchmarks.md, `flamespark bench`).

    python benchmarks/rates.py enwiki-sample.xml.bz2 --out rates-spark              # 3, 5, 10 and 20 docs/s on Spark
    python benchmarks/rates.py --synthetic 60 --rates 20,50 --engine local --out rates-local

`flamespark bench --rates` offers one input at several rates, so its event
time keeps up with the clock at one rate at most. Here each rate R has an
input of its own: the documents (the pages of DUMP, or N made up with
Zipf word frequencies) 1000 / R ms apart in event time, so that offered R
a second their event time keeps up with the clock, as a live stream's
does; then --percent % of them delayed by |N(0, --stddev-ms)| (seed
--seed), the same documents by the same event-time delays at every rate.
A final latency is then the reorder latency, the micro-batch that releases
the output and the processing. Each rate is one `flamespark bench` run at
that rate (OUT/R/: report.md, report.json, latency.png, on Spark
batches.png, with its warm-up). Prints the table of every rate and mode,
and writes it to OUT/rates.md, the points to OUT/rates.json and the plot
to OUT/rates.png. Exit status 1 if the modes' outputs differ at a rate.
"""
import argparse
import json
import sys
from pathlib import Path

if not __package__:  # run as `python benchmarks/rates.py`: this checkout's packages first
    import _checkout  # noqa: F401

from benchmarks.lib.script import run_script
from flamespark.io.atomic import write_atomic
from flamespark.runtime.options import ENGINES
from flamespark.tools.arguments import (DefaultsHelpFormatter, comma_separated, non_negative_float, non_negative_int,
                                        percent, positive_float, positive_int, spark_master)
from flamespark.tools.bench import bench, highest_sustained, modes_agree, rate_point
from flamespark.tools.bench_plots import check_matplotlib, plot_rates
from flamespark.tools.bench_report import rates_markdown
from flamespark.tools.disorder import disorder_file
from flamespark.tools.loader import load_graph
from flamespark.tools.pace import real_time_interval_ms
from flamespark.tools.wikipedia import iter_pages, synthetic_documents, write_events

REPOSITORY = Path(__file__).resolve().parents[1]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchmarks/rates.py", description=__doc__.split("\n\n")[0],
                                     epilog="See the module's docstring for what each run does.",
                                     formatter_class=DefaultsHelpFormatter)
    documents = parser.add_mutually_exclusive_group(required=True)
    documents.add_argument("dump", nargs="?", metavar="DUMP", help="a MediaWiki XML dump (.xml, .xml.bz2, .xml.gz)")
    documents.add_argument("--synthetic", type=positive_int, metavar="N", help="or N made-up documents")
    parser.add_argument("--rates", type=comma_separated(positive_float), default="3,5,10,20", metavar="R1,R2,...",
                        help="the offered rates, documents a second")
    parser.add_argument("--pipeline", default=f"{REPOSITORY / 'benchmarks' / 'inverted_index_tuned.py'}:graph",
                        metavar="PATH.py:ATTR", help="the pipeline, whose one source is named docs")
    parser.add_argument("--engine", choices=ENGINES, default="spark")
    parser.add_argument("--master", type=spark_master, help="Spark master (default: local[*])")
    parser.add_argument("--reorder-latency", type=non_negative_int, default=3000, metavar="MS")
    parser.add_argument("--percent", type=percent, default=30.0, help="share of the documents delayed, in %%")
    parser.add_argument("--stddev-ms", type=non_negative_float, default=1000.0, metavar="MS",
                        help="the delays' standard deviation: a delayed event's delay is |N(0, MS)| ms")
    parser.add_argument("--seed", type=non_negative_int, default=1, help="random seed of the delays")
    parser.add_argument("--out", type=Path, default=Path("rates"), metavar="DIR",
                        help="where the inputs, each rate's report and the summary go")
    return parser


def one_rate(args, rate: float) -> dict:
    """The bench report of both modes offered `rate` documents a second, on the documents spaced for it, as a
    point of the sweep."""
    documents = synthetic_documents(args.synthetic) if args.synthetic else iter_pages(args.dump)
    in_order, arrival = args.out / f"docs-{rate:g}.jsonl", args.out / f"docs-{rate:g}-disordered.jsonl"
    write_events(documents, in_order, real_time_interval_ms(rate))
    disorder_file(in_order, arrival, args.percent, args.stddev_ms, args.seed)
    report = bench(load_graph(args.pipeline), {"docs": arrival}, args.out / f"{rate:g}", engine=args.engine,
                   reorder_latency=args.reorder_latency, rate=rate, master=args.master, title=args.pipeline)
    return rate_point(report, rate)


def command(args) -> int:
    check_matplotlib()
    args.out.mkdir(parents=True, exist_ok=True)
    points = [one_rate(args, rate) for rate in args.rates]
    summary = {"pipeline": args.pipeline, "engine": args.engine, "reorder_latency": args.reorder_latency,
               "rates": points, "highest_sustained": highest_sustained(points)}
    table = "\n".join(rates_markdown(summary))
    write_atomic(args.out / "rates.md", table)
    write_atomic(args.out / "rates.json", json.dumps(summary, indent=2) + "\n")
    plot_rates(points, args.out / "rates.png")
    print(table)
    print(f"rates: reports in {args.out}/RATE/, the table in {args.out / 'rates.md'}", file=sys.stderr)
    return 0 if all(map(modes_agree, points)) else 1


def main(argv=None) -> int:
    return run_script(build_parser(), command, argv)


if __name__ == "__main__":
    sys.exit(main())
