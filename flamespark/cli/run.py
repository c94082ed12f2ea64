"""`flamespark run`: a pipeline over JSONL or Parquet inputs, written to an output directory."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from flamespark.tools.arguments import PIPELINE_HELP, positive_float, positive_int, reorder_latencies, spark_master
from flamespark.core.errors import OptionError
from flamespark.io.sinks import SINK_FORMATS
from flamespark.runtime.options import ENGINES, MODES, SPARK_OPTIONS
from flamespark.runtime.punctuations import POLICIES


def _input_pair(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH, got {text!r}")
    return name, path


def _sink_pair(text: str) -> tuple[str, str]:
    name, sep, url = text.partition("=")
    if not sep or not name or not url.startswith("kafka://"):
        raise argparse.ArgumentTypeError(f"expected NAME=kafka://HOST:PORT/TOPIC, got {text!r}")
    return name, url


class _Inputs(argparse.Action):
    """Collects repeated `--input NAME=PATH` (or `--sink NAME=URL`) into a dict of name to path; a name given
    twice is refused."""

    def __call__(self, parser, namespace, value, option_string=None):
        inputs = dict(getattr(namespace, self.dest) or {})
        name, path = value
        if name in inputs:
            raise argparse.ArgumentError(self, f"{'sink' if self.dest == 'sink' else 'source'} {name!r} given twice")
        inputs[name] = path
        setattr(namespace, self.dest, inputs)


def add_pipeline_arguments(parser: argparse.ArgumentParser):
    """The pipeline, its inputs, the output directory and the run options: shared by `run` and `bench`."""
    parser.add_argument("pipeline", metavar="PATH.py:ATTR", help=PIPELINE_HELP)
    parser.add_argument("--input", metavar="NAME=PATH", action=_Inputs, type=_input_pair, required=True,
                        help="events for source NAME: a JSONL file (one object per line with an integer 'ts'), a "
                             "directory of such .jsonl files or of .parquet files with an integer column 'ts' "
                             "(Spark's file source; the local engine reads them in name order), or a Kafka topic, "
                             "kafka://HOST:PORT/TOPIC (values as JSONL lines; ?ts=record: the records' timestamps "
                             "as event times); repeat per source")
    parser.add_argument("--out", metavar="DIR", required=True, type=Path, help="output directory")
    parser.add_argument("--engine", choices=ENGINES, default="spark", help="where to run (default: spark)")
    parser.add_argument("--reorder-latency", metavar="MS[,MS...]", type=reorder_latencies, default=0,
                        help="how far (ms) an event may arrive behind the newest one of its source (default: 0); "
                             "several increasing latencies release the outputs at the first and "
                             "correct them at each later one (DIR/<sink>.corrections.jsonl)")
    parser.add_argument("--late", choices=POLICIES, default="drop",
                        help="late events: drop (to the dead letters, DIR/late.jsonl; the default), adjust (to "
                             "just after the punctuation) or fail")
    parser.add_argument("--rate", metavar="EVENTS_PER_S", type=positive_float,
                        help="offer the input events at this rate, in events/s over all sources taken in turn, "
                             "with latency counted from each event's arrival (on Spark, JSONL file inputs; "
                             "default: as fast as possible)")
    parser.add_argument("--batch-size", metavar="N", type=positive_int, default=None,
                        help="apply N events a batch and punctuate after each (local engine, unpaced; default "
                             "1000); outputs do not depend on it, early results and replays do")
    parser.add_argument("--master", metavar="URL", type=spark_master, default=None,
                        help="Spark master URL (default: local[*])")
    parser.add_argument("--checkpoint", metavar="DIR", type=Path, default=None,
                        help="Spark checkpoint directory; rerun with the same one to resume (default: DIR/_checkpoint)")
    parser.add_argument("--max-rows-per-batch", metavar="N", type=positive_int, default=None,
                        help="replay at most N events of each JSONL file input in each Spark micro-batch, so batch "
                             "boundaries do not depend on timing (spark engine; default: all available)")
    parser.add_argument("--ingest-partitions", metavar="N", type=positive_int, default=None,
                        help="ingest each JSONL file input in N parallel Spark tasks, each judging lateness by its "
                             "own share of the events (spark engine, optimistic mode; default: the shard count)")


def run_options(args) -> dict:
    """The run options of `add_pipeline_arguments`, as keyword arguments of the tools; an OptionError naming the
    flags, not the Python parameters that `RunOptions` names, if the local engine is given the Spark engine's
    (its engine options, and --idle-timeout), Spark the local engine's --batch-size, or a paced run
    --batch-size."""
    if args.engine == "local":
        given = [f"--{name.replace('_', '-')}" for name in (*SPARK_OPTIONS, "idle_timeout")
                 if getattr(args, name, None) not in (None, False)]
        if given:
            raise OptionError(f"{', '.join(given)}: only with --engine spark (the local engine runs in this process "
                              f"over finite inputs)")
        if args.batch_size is not None and args.rate is not None:
            raise OptionError("--batch-size: only without --rate (a paced run applies in one batch whatever has "
                              "arrived while it worked)")
    elif args.batch_size is not None:
        raise OptionError("--batch-size: only with --engine local (on Spark a batch is a micro-batch, which "
                          "--max-rows-per-batch makes smaller)")
    return dict(engine=args.engine, reorder_latency=args.reorder_latency, late=args.late, rate=args.rate,
                batch_size=args.batch_size, master=args.master, checkpoint=args.checkpoint, max_rows_per_batch=args.max_rows_per_batch,
                ingest_partitions=args.ingest_partitions)


def add_parser(commands):
    parser = commands.add_parser(
        "run", help="run a pipeline over JSONL or Parquet inputs",
        description="Run a pipeline and write DIR/<sink>.jsonl (or .parquet), DIR/late.jsonl (and with --changes "
                    "DIR/<sink>.changes.jsonl), then DIR/metrics.json, whose presence marks a complete output. "
                    "On Spark, Ctrl-C stops the run cleanly; rerun the same command (the same --checkpoint) to "
                    "resume where it stopped.")
    add_pipeline_arguments(parser)
    parser.add_argument("--mode", choices=MODES, default="optimistic",
                        help="optimistic (default) or the buffered baseline")
    parser.add_argument("--sink-format", choices=SINK_FORMATS, default="jsonl",
                        help="file format of the sinks' outputs (default: jsonl); Parquet keeps dict payloads as "
                             "columns, and a sink it cannot hold (a column of mixed types) is written as JSONL, with "
                             "an error")
    parser.add_argument("--follow", action="store_true",
                        help="keep reading input directories for new files until Ctrl-C, which stops cleanly "
                             "(exit status 0; rerun with the same --checkpoint to go on); each micro-batch's releases "
                             "are written as it ends, to DIR/<sink>/batch-N.<format> and DIR/late/ (spark engine)")
    parser.add_argument("--changes", action="store_true",
                        help="also write each sink's changelog to DIR/<sink>.changes.jsonl: every result at the end "
                             "of the batch that computed it ({\"op\": \"+\"}) and every retraction ({\"op\": \"-\"}, with the "
                             "event that caused it), ahead of the final outputs (with --follow: "
                             "DIR/<sink>.changes/batch-N.jsonl)")
    parser.add_argument("--sink", metavar="NAME=URL", action=_Inputs, type=_sink_pair, default={},
                        help="send sink NAME's outputs to a Kafka topic, kafka://HOST:PORT/TOPIC, as JSON values "
                             "with their event times as timestamps, exactly once (and with --changes its changelog "
                             "to TOPIC.changes), instead of to DIR/NAME.jsonl; repeat per sink")
    parser.add_argument("--idle-timeout", metavar="SECONDS", type=positive_float, default=None,
                        help="a source that delivers nothing for this long stops holding back the others' releases; "
                             "its later events behind them are late (spark engine; default: wait for every source)")
    parser.set_defaults(handler=command)


def command(args) -> int:
    from flamespark.tools.runner import checkpoint_directory, run_to_directory

    checkpoint = checkpoint_directory(args.out, args.checkpoint)
    options = run_options(args)
    try:
        result = run_to_directory(args.pipeline, args.input, args.out, mode=args.mode, sink_format=args.sink_format,
                                  follow=args.follow, idle_timeout=args.idle_timeout, changes=args.changes,
                                  sinks=args.sink, **options)
    except KeyboardInterrupt:
        if args.engine == "local":
            raise
        print(f"flamespark: stopped before the end of the input; rerun the same command to resume "
              f"(checkpoint {checkpoint})", file=sys.stderr)
        return 130
    metrics = result.metrics
    late = (f"{metrics['late_adjusted']} late one(s) adjusted" if args.late == "adjust"
            else f"{metrics['late_dropped']} late one(s) dropped")
    summary = (f"released {metrics['released']} record(s) from {metrics['events']} event(s) applied ({late}, "
               f"replay ratio {metrics['replay_ratio']:.3f}); outputs in {args.out}")
    if metrics["changes"] is not None:
        changes = metrics["changes"]
        summary += (f"; {changes['added']} result(s) added early, {changes['retracted']} retracted"
                    if args.mode == "optimistic" else
                    f"; {changes['added']} result(s) added as released (the buffered mode has none early)")
        summary += f" (changelogs: {args.out}/<sink>.changes.jsonl)"
    if metrics["levels"] is not None:
        corrected = sum(level["corrections"] for level in metrics["levels"])
        summary += f"; {corrected} correction(s) at later latencies (corrections: {args.out}/<sink>.corrections.jsonl)"
    if args.follow:
        summary = f"flamespark: stopped; {summary}; rerun the same command to go on (checkpoint {checkpoint})"
    print(summary, file=sys.stderr)
    return 0
