"""`flamespark.run`: one entry point for every engine."""
import uuid

from flamespark.core.errors import LateEventError
from flamespark.io.inputs import check_input_files, check_input_names, late_event_placed
from flamespark.io.kafka_sink import close_writers, kafka_sinks, open_writers
from flamespark.result import Result
from flamespark.runtime.options import RunOptions


def run(graph, inputs, engine="local", mode="optimistic", reorder_latency=0, late="drop", *,
        batch_size=None, rate=None, changes=False, progress=None, idle_timeout=None, sinks=None,
        **engine_options) -> Result:
    """Run `graph` over `inputs` and return the released outputs.

    `inputs` maps each source name to an iterable of `(ts, payload)` pairs in
    arrival order (`ts` an integer in ms), a JSONL file or a directory of
    JSONL or Parquet files (see flamespark.io.inputs). Events may arrive up to
    `reorder_latency` ms behind the newest event of their source; later ones
    are late and handled by `late` ("drop", "adjust" or "fail"). With several
    increasing latencies, `reorder_latency=(D1, ..., Dn)`, the
    outputs are those of D1 and `Result.corrections` holds what each later
    latency changes among them (see flamespark.runtime.corrections). Events
    move in batches, and a punctuation follows each: the local engine takes
    `batch_size` events a batch (1,000 by default; unpaced runs), Spark a
    micro-batch; the outputs are the same for any batches. `mode` is
    "optimistic" or "buffered" (the buffer-and-sort baseline); both release
    the same outputs. With `rate` (events/s) the inputs arrive paced, and
    latency counts from each event's arrival. With `changes=True` the result
    also has each sink's changelog: at the end of each batch, every output it
    computed (`+`) and every retraction (`-`, naming the late event that
    caused it). With `progress` the run keeps a status
    line on stderr (by default, if stderr is a terminal). `idle_timeout` (s,
    Spark) stops a silent source from holding back the others' releases. The
    Spark engine's own options (`master`, `checkpoint`, `shards`,
    `max_rows_per_batch`, `ingest_partitions`, `follow`, `output`, ...) are
    `engine_options`.
    `sinks` maps sinks to Kafka topics, `{"index": "kafka://HOST:PORT/TOPIC"}`,
    which get their outputs (and changelog, in `TOPIC.changes`) exactly once
    (see flamespark.io.kafka_sink) besides the Result; an input may be a
    topic too (see flamespark.io.kafka).
    Every option is checked before the engine starts; a bad one raises
    OptionError, the same on every engine. So is every event of a file or
    directory input: a bad one raises InputError naming its file and line
    (or row) before any work is done.

    >>> import flamespark as fs
    >>> g = fs.Graph("sums")
    >>> def add(total, n):
    ...     total = (total or 0) + n
    ...     return total, [total]
    >>> g.source("numbers").stateful(key=lambda n: n % 2, update=add).sink("out")
    >>> fs.run(g, {"numbers": [(2, 2), (1, 1), (4, 4)]}, reorder_latency=5).outputs
    {'out': [1, 2, 6]}
    >>> late = fs.run(g, {"numbers": [(2, 2), (4, 4), (0, 6)]}, reorder_latency=5, changes=True, batch_size=2)
    >>> [(c["op"], c["ts"], c["payload"]) for c in late.changes["out"]]
    [('+', 2, 2), ('+', 4, 6), ('+', 0, 6), ('+', 2, 8), ('+', 4, 12), ('-', 2, 2), ('-', 4, 6)]
    """
    options = RunOptions.of(engine, mode, reorder_latency, late, batch_size, idle_timeout=idle_timeout,
                            rate=rate, changes=changes, progress=progress, **engine_options)
    topics = kafka_sinks(sinks, graph.sinks)
    check_input_names(graph.sources, inputs)
    check_input_files(inputs, follow=bool(engine_options.get("follow")))
    return run_with_options(graph, inputs, options, topics)


def run_with_options(graph, inputs, options: RunOptions, sink_topics: dict | None = None) -> Result:
    """`run` with its options and inputs already checked (a file input read through by `check_input_files`)
    and its Kafka sinks parsed (`{sink: KafkaTopic}`); a late event under `late="fail"` is named by its file
    and line too, where its source is a file.

    >>> import flamespark as fs
    >>> from flamespark.runtime.options import RunOptions
    >>> g = fs.Graph("doubled")
    >>> g.source("numbers").map(lambda n: 2 * n).sink("out")
    >>> run_with_options(g, {"numbers": [(1, 1), (3, 3), (2, 2)]}, RunOptions.of(reorder_latency=5)).outputs
    {'out': [2, 4, 6]}
    """
    try:
        if options.engine == "local":
            return _run_local(graph, inputs, options, sink_topics or {})
        from flamespark.engines.spark.query import run_spark

        return run_spark(graph, inputs, options, sink_topics=sink_topics, **options.engine_options)
    except LateEventError as exc:
        placed = late_event_placed(exc, inputs)
        if placed is exc:
            raise
        raise placed from None


def _run_local(graph, inputs, options: RunOptions, sink_topics: dict) -> Result:
    """A local run, whose Kafka sinks get all its outputs in one transaction once it ended. Their writers open
    first, so that a broker that cannot be reached fails the run before it does any work."""
    from flamespark.engines.local import LocalRun

    # A local run does not resume: every run writes all of its outputs, under transactional ids of its own.
    writers = open_writers(sink_topics, f"flamespark-{graph.name}-{uuid.uuid4().hex}", options.changes)
    try:
        run = LocalRun(graph, options)
        result = run.run(inputs)
        for sink, writer in writers.items():
            writer.write(0, zip(result.outputs[sink], run.output_times[sink]), result.changes.get(sink, ()))
        return result
    finally:
        close_writers(writers)
