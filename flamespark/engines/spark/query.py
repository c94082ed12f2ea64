"""Compiling a graph to one Structured Streaming query, and running it to the end of its input."""
import hashlib
import re
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

from pyspark.sql import functions as F

from flamespark.core import errors
from flamespark.engines.by_value import register_noted
from flamespark.engines.spark.collector import BatchCollector, assemble
from flamespark.engines.spark.processors import (
    STATE_LAYOUT,
    BufferedStageProcessor,
    IngestProcessor,
    ReplayIngest,
    StageProcessor,
)
from flamespark.engines.spark.files import file_stream
from flamespark.engines.spark.interrupt import interrupt_flag
from flamespark.engines.spark.kafka_source import kafka_stream
from flamespark.engines.spark.levels import Levels
from flamespark.engines.spark.replay import ReplaySource, ingesting_source, write_replay_file
from flamespark.engines.spark.rows import (
    END_OF_TIME_MS,
    INFINITY,
    ITEMS,
    PUNCT,
    ROW_SCHEMA,
    TIMED_SCHEMA,
    event_time_shift,
)
from flamespark.engines.spark.session import LOG_FILE, spark_session
from flamespark.engines.spark.topology import Topology
from flamespark.io.atomic import write_atomic
from flamespark.io.checkpoint import claim, committed_a_batch, file_digest
from flamespark.core.errors import FlameSparkError
from flamespark.io.inputs import check_input_names, count_events, directory_format, is_kafka, is_path, source_events
from flamespark.io.kafka import check_topic
from flamespark.io.kafka_sink import close_writers, make_sink_topics, open_writers
from flamespark.io.sinks import check_sink_names
from flamespark.core.items import encode_event
from flamespark.runtime.options import RunOptions


def _encoded_events(source, given):
    """`(ts, payload bytes)` pairs, checked, from a JSONL file or an iterable of `(ts, payload)`."""
    for ts, payload in source_events(source, given):
        yield ts, encode_event(source, ts, payload)


def _process(stream, processor, group_column, timed=False, keep_event_time=False):
    """A keyed stage; `timed` ones run on event-time timers and may pass the event-time column on."""
    return stream.groupBy(group_column).transformWithStateInPandas(
        statefulProcessor=processor,
        outputStructType=TIMED_SCHEMA if keep_event_time else ROW_SCHEMA,
        outputMode="Append",
        timeMode="EventTime" if timed else "None",
        eventTimeColumnName="event_time" if keep_event_time else "",
    )


def _watermarked(stream, latencies: tuple):
    """The baseline's event-time column and Spark watermark (see rows.TIMED_SCHEMA).

    Spark treats a row at or below its watermark as late; with a delay of
    the last reorder latency plus 1 ms, its watermark less the shift is
    FlameSpark's punctuation (the last level's), so both agree on what is
    late and what is final.
    """
    shift = event_time_shift(latencies)
    event_time = (
        F.when(F.col("kind") == ITEMS, F.timestamp_millis(F.col("ts") + shift))
        .when((F.col("kind") == PUNCT) & (F.col("ts") >= INFINITY), F.timestamp_millis(F.lit(END_OF_TIME_MS)))
        .otherwise(F.lit(None).cast("timestamp"))
    )
    return stream.withColumn("event_time", event_time).withWatermark("event_time", f"{latencies[-1] + 1} milliseconds")


def _replay_stream(spark, source, path, rate, max_rows, keys, ingest=None):
    source_class = ReplaySource if ingest is None else ingesting_source(ingest)
    spark.dataSource.register(source_class)
    reader = (spark.readStream.format(source_class.name()).option("path", str(path)).option("source", source)
              .option("keys", ",".join(map(str, keys))))
    if rate:
        reader = reader.option("rate", str(rate))
    if max_rows:
        reader = reader.option("maxRowsPerBatch", str(max_rows))
    return reader.load()


def _is_directory(given) -> bool:
    """Whether an input is a directory, which Spark's file source reads."""
    return is_path(given) and Path(given).is_dir()


def prepare_inputs(graph, inputs, directory: Path, follow=False) -> dict:
    """What each source reads: `("files", dir, format, count)`, `("kafka", url, partitions)` or
    `("replay", file written under directory)`.

    A directory is read with Spark's file source: a finite run reads the
    events its files hold at the start (`count`), a `follow` one new files
    until stopped (`count` None). A Kafka topic is read by kafka_source.
    Anything else, and an empty directory in a finite run, is replayed from
    a file written for it.
    """
    directory.mkdir(parents=True, exist_ok=True)
    prepared = {}
    for index, source in enumerate(graph.sources):
        given = inputs[source]
        if is_kafka(given):
            prepared[source] = ("kafka", given, len(check_topic(source, given)))
            continue
        if _is_directory(given):
            fmt = directory_format(source, given)
            count = None if follow else count_events(given, fmt)
            if count != 0:
                prepared[source] = ("files", Path(given).resolve(), fmt, count)
                continue
            given = []
        path = directory / f"source-{index}.msgpack"
        write_replay_file(path, _encoded_events(source, given))
        prepared[source] = ("replay", path)
    return prepared


def check_inputs_allow(inputs: dict, rate, follow: bool):
    """Refuse a rate for inputs that are directories or Kafka topics (read as their files or records come),
    and `follow` where no input is either (it would have nothing to watch, and the run would never end)."""
    directories = [source for source, given in inputs.items() if _is_directory(given)]
    topics = [source for source, given in inputs.items() if is_kafka(given)]
    if rate is not None and directories:
        raise errors.OptionError(
            f"rate paces inputs that are replayed (JSONL files, iterables); {', '.join(map(repr, directories))} "
            f"{'is a directory' if len(directories) == 1 else 'are directories'}, which Spark's file source reads "
            f"as its files come: give a JSONL file instead, or no rate"
        )
    if rate is not None and topics:
        raise errors.OptionError(
            f"rate paces inputs that are replayed (JSONL files, iterables); {', '.join(map(repr, topics))} "
            f"{'is a Kafka topic' if len(topics) == 1 else 'are Kafka topics'}, read as its records come: "
            f"give no rate"
        )
    if follow and not directories + topics:
        raise errors.OptionError(
            f"follow watches input directories for new files, and no input ({', '.join(map(repr, inputs))}) is a "
            f"directory: without follow, the run ends after its inputs"
        )


def _fingerprint(prepared: dict) -> dict:
    described = {"replay": lambda how: file_digest(how[1]), "files": lambda how: f"{how[2]} files in {how[1]}",
                 "kafka": lambda how: how[1]}
    return {source: described[how[0]](how) for source, how in prepared.items()}


def _ingest_partitions(prepared: dict, partitions: int, mode: str, laned: dict) -> dict:
    """How many ingest partitions take each source: `partitions` for a replayed one, one for a directory, and
    one per Kafka partition for a topic (in the buffered baseline, one for all; and one for a topic read in
    lanes, `laned`).

    A directory source stays in one partition: its rows come from files read
    in parallel, with no position across files to spread them by that a
    restart would see again, and its expected count ends it in that one.
    """
    counts = {"replay": lambda how: partitions, "files": lambda how: 1,
              "kafka": lambda how: how[2] if mode == "optimistic" else 1}
    return {source: 1 if source in laned else counts[how[0]](how) for source, how in prepared.items()}


def _laned_topics(prepared: dict, idle_timeout) -> dict:
    """`{source: number of Kafka partitions}` of the topics whose partitions are ingested together, as lanes of
    their own (see IngestProcessor): all of them in a run with an idle timeout, so that a quiet partition stops
    holding its topic back, none otherwise."""
    if idle_timeout is None:
        return {}
    return {source: how[2] for source, how in prepared.items() if how[0] == "kafka"}


def source_streams(spark, prepared: dict, topology, rate=None, max_rows=None, replay_ingest=None, follow=False):
    """Each source's rows, the event counts that end finite directory sources, and the sources whose rows
    come raw (to be ingested by an ingest operator).

    With `replay_ingest` (a function of the source name giving its
    ReplayIngest), a replayed source is ingested as it is read; any other
    source gives raw event rows, keyed by ingest partition.
    """
    streams, expected, raw = {}, {}, []
    for source, how in prepared.items():
        keys = topology.ingest_keys[:topology.partitions[source]]
        if how[0] == "replay":
            ingest = replay_ingest(source) if replay_ingest else None
            streams[source] = _replay_stream(spark, source, how[1], rate, max_rows, keys, ingest)
            if ingest is None:
                raw.append(source)
            continue
        if how[0] == "kafka":
            _, url, count = how
            # Each Kafka partition under its ingest partition's key; in the baseline, or read in lanes, all under
            # the one key.
            streams[source] = kafka_stream(spark, source, url, keys if len(keys) == count else keys[:1] * count,
                                           follow, max_rows)
            raw.append(source)
            continue
        _, directory, fmt, count = how
        streams[source] = file_stream(spark, source, directory, fmt, keys[0])
        raw.append(source)
        if count is not None:
            expected[source] = count
    return streams, expected, raw


def _union(streams):
    streams = list(streams)
    union = streams[0]
    for other in streams[1:]:
        union = union.unionByName(other)
    return union


def build_query(streams: dict, raw: list, topology, reorder_latency, late, expected=None, idle_timeout=None,
                changes=False, lanes=None):
    """Each source's rows -> ingest (for the sources in `raw`) -> stages (each holding the barrier for the sink
    items it makes, the last also for those from the sources) -> released rows, in either mode.

    With `changes`, the stages holding the barrier also emit each batch's changelog rows. Ingest takes the
    Kafka partitions of the topics of `lanes` as lanes (see IngestProcessor).
    """
    def ingest_processor(sources):
        return IngestProcessor(topology, sources, reorder_latency, late, expected, idle_timeout, changes, lanes)

    return build_stages(streams, raw, topology, ingest_processor, changes)


def build_stages(streams: dict, raw: list, topology, ingest_processor, changes=False):
    """`build_query` with the ingest operator of the sources in `raw` made by `ingest_processor(sources)`, a
    keyed processor of their raw rows grouped by their `shard` column (both modes call it, the buffered one
    once per source)."""
    def ingest(stream, sources):
        # Raw rows carry their ingest group's key (by default topology.ingest_keys) in `shard`.
        return _process(stream, ingest_processor(sources), "shard")

    last = topology.barrier_stage
    if topology.mode == "buffered":
        # As a Spark user writes it: a watermark per input, so that Spark's watermark is their minimum.
        latencies = topology.levels.latencies
        stream = _union(_watermarked(ingest(rows, [source]) if source in raw else rows, latencies)
                        for source, rows in streams.items())
        for stage in range(1, last + 1):
            processor = BufferedStageProcessor(topology, stage, changes=changes)
            stream = _process(stream, processor, "shard", timed=True, keep_event_time=stage != last)
        return stream
    parts = [rows for source, rows in streams.items() if source not in raw]
    if raw:
        parts.append(ingest(_union(streams[source] for source in raw), raw))
    stream = _union(parts)
    for stage in range(1, last + 1):
        stream = _process(stream, StageProcessor(topology, stage, changes=changes), "shard")
    return stream


def kafka_writer_id(workdir: Path) -> str:
    """The id of the run's Kafka sink writers: the same for every run that resumes the checkpoint in `workdir`
    or starts it afresh with the same claims (which replays the same batches), another for any other.

    It hashes the claims with a random salt kept beside them, so that a new checkpoint directory, or a run
    claiming other options, never finds another run's batches committed.
    """
    salt = workdir / "kafka-writer-salt"
    if not salt.is_file():
        write_atomic(salt, uuid.uuid4().hex)
    digest = hashlib.sha256()
    for name in (salt.name, "engine.json", "shards.json"):
        digest.update((workdir / name).read_bytes())
    return f"flamespark-{digest.hexdigest()[:20]}"


def run_spark(graph, inputs, options: RunOptions, sink_topics=None, master=None, checkpoint=None, spark=None,
              shards=None, timeout=None, max_rows_per_batch=None, follow=False, output=None, output_format="jsonl",
              ingest_partitions=None):
    """Run `graph` as one Spark Structured Streaming query; returns the same Result as the local engine.

    `options` (mode, reorder latency, late policy, idle timeout) come checked;
    the keyword arguments are the Spark engine's own options (SPARK_OPTIONS).
    `inputs` maps source names to a JSONL file, a directory of JSONL or
    Parquet files, or an iterable of `(ts, payload)`. Files are replayed in
    arrival order (at `options.rate` events/s if given). With `follow`, directories
    are watched for new files until the run is interrupted or `timeout`
    seconds pass; otherwise the run ends after the events present at its start.
    With `options.idle_timeout` (s), a source that delivers nothing for that
    long no longer holds back the others' releases; its later events behind
    them are late.
    With `output`, each micro-batch's releases are written as it completes,
    to `output/<sink>/` and `output/late/` (`output_format` "jsonl" or "parquet"),
    and with `options.changes` its changelog to `output/<sink>.changes/`.
    With `checkpoint`, a stopped run resumes from it and ends with exactly the
    output of an uninterrupted one; without, a temporary directory is used.
    In the optimistic mode, each replayed source's events are ingested by
    `ingest_partitions` parallel tasks (default: `shards`), each judging
    lateness by its own part's punctuation; the buffered baseline ingests
    each source in one task, so that Spark's watermark agrees with it.
    The sinks of `sink_topics` (`{sink: io.kafka.KafkaTopic}`) go to their
    topics, each micro-batch's outputs in one Kafka transaction, exactly once
    across restarts from the checkpoint (`kafka_writer_id`).
    """
    graph.validate()
    check_input_names(graph.sources, inputs)
    if output is not None:
        check_sink_names(graph.sinks)
    mode, reorder_latency, late = options.mode, options.reorder_latency, options.late
    idle_timeout, rate = options.idle_timeout, options.rate
    check_inputs_allow(inputs, rate, follow)
    workdir = Path(checkpoint) if checkpoint else Path(tempfile.mkdtemp(prefix="flamespark-"))
    writers = {}
    try:
        # Replay files are rewritten from the inputs by every run, so a refused claim harms nothing. Written
        # before Spark starts, as writing them checks every event of an iterable input.
        prepared = prepare_inputs(graph, inputs, workdir / "inputs", follow)
        resuming = committed_a_batch(workdir / "checkpoint")
        if not resuming:
            # A query stopped or failed before its first commit left nothing to resume (the batch in flight is
            # redone): a rerun starts afresh, whatever it was run with, rather than resume a plan it may not fit.
            shutil.rmtree(workdir / "checkpoint", ignore_errors=True)
            shutil.rmtree(workdir / "parts", ignore_errors=True)
        # What the run's outputs depend on, claimed before Spark starts; the shard counts, which the session
        # may decide, just after.
        claim(workdir, "engine.json", {
            "graph": graph.to_dot(), "mode": mode, "reorder_latency": reorder_latency, "late": late,
            "idle_timeout": idle_timeout, "inputs": _fingerprint(prepared), "changes": options.changes,
            "state_layout": STATE_LAYOUT,
        }, started=resuming)
        # A sink's broker is reached, and its topics made, before Spark starts.
        make_sink_topics(sink_topics or {}, options.changes)
        spark = spark or spark_session(master, shards)
        shards = shards or int(spark.conf.get("spark.sql.shuffle.partitions"))
        partitions = (ingest_partitions or shards) if mode == "optimistic" else 1
        claim(workdir, "shards.json", {"shards": shards, "ingest_partitions": partitions}, started=resuming)
        register_noted()
        laned = _laned_topics(prepared, idle_timeout)
        levels = Levels(options.latencies, graph.sinks)
        topology = Topology(graph, mode, shards, _ingest_partitions(prepared, partitions, mode, laned), levels,
                            early=options.changes)
        levelled = levels if levels.count > 1 else None
        # An idle timeout judges by the batches' clock, across the sources: then all go through IngestProcessor.
        replay_ingest = None if idle_timeout is not None else (
            lambda source: ReplayIngest(topology, source, reorder_latency, late, options.changes))
        # Each replayed input at its share of the rate, so that all of them together offer `rate` events/s.
        per_input = rate / len(prepared) if rate else None
        streams, expected, raw = source_streams(spark, prepared, topology, per_input, max_rows_per_batch, replay_ingest,
                                                follow)
        stream = build_query(streams, raw, topology, reorder_latency, late, expected, idle_timeout, options.changes,
                             laned)
        writers = open_writers(sink_topics, kafka_writer_id(workdir), options.changes) if sink_topics else {}
        collector = BatchCollector(workdir / "parts", graph.sinks,
                                   progress=options.shows_progress,
                                   output=output, output_format=output_format, kafka_writers=writers,
                                   levels=levelled)
        started = time.perf_counter()
        writer = stream.writeStream.foreachBatch(collector)
        writer = writer.trigger(processingTime="0 seconds") if follow else writer.trigger(availableNow=True)
        query = (
            writer.option("checkpointLocation", str(workdir / "checkpoint"))
            .queryName(f"flamespark_{graph.name}")
            .start()
        )
        try:
            _await(query, timeout, follow)
        finally:
            if collector.progress:
                sys.stderr.write("\n")
        wall_s = time.perf_counter() - started
        return assemble(collector.parts(), graph.sinks, query.recentProgress, wall_s, paced=bool(rate),
                        changes=options.changes, stage_names=topology.stage_names(raw), levels=levelled)
    finally:
        close_writers(writers)
        if not checkpoint:
            shutil.rmtree(workdir, ignore_errors=True)


# How often a wait for the query looks for Ctrl-C (s).
_POLL_S = 0.2


def _await(query, timeout, follow=False):
    """Wait for the query to end, stopping it cleanly on Ctrl-C or at `timeout` s.

    Stopped on Ctrl-C, a `follow` query returns (its releases so far are the
    run's result), any other raises KeyboardInterrupt; stopped at `timeout`, a
    query that is not `follow` raises FlameSparkError.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    with interrupt_flag() as interrupted:
        while not interrupted.is_set():
            wait = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
            if wait <= 0:
                query.stop()
                if follow:
                    return
                raise FlameSparkError(f"the Spark query did not finish within {timeout} s and was stopped")
            try:
                if query.awaitTermination(max(wait, 0.001)):  # Spark takes whole milliseconds, at least one
                    return
            except Exception as exc:  # a StreamingQueryException wraps the worker's error
                raise _translate(exc) from None
        query.stop()
    if not follow:
        raise KeyboardInterrupt


_ERROR_LINE = re.compile(rf"{re.escape(errors.__name__)}\.(\w+): (.*)")  # how a worker's traceback names our errors
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit)): (.+)$", re.MULTILINE)
_TASK_FAILURE = re.compile(r"most recent failure: Lost task [^:]*: (?:[\w$]+\.)*([\w$]+): (.+)")
_QUERY_PREFIX = re.compile(r"^\[STREAM_FAILED\] Query .*? terminated with exception: ")


def _translate(exc) -> FlameSparkError:
    """Our own error raised inside a Spark worker, or a one-sentence summary pointing to the log."""
    text = str(exc)
    match = _ERROR_LINE.search(text)
    if match and isinstance(getattr(errors, match.group(1), None), type):
        return getattr(errors, match.group(1))(match.group(2).strip())
    return FlameSparkError(f"the Spark query failed: {_cause(text)[:300]} (Spark's log: {LOG_FILE})")


def _cause(text: str) -> str:
    """The telling part of Spark's error text: a Python exception, else why a task failed, else its first line."""
    for match in _EXCEPTION_LINE.finditer(text):
        if not match.group(1).startswith(("pyspark.", "py4j.")):
            return f"{match.group(1)}: {match.group(2).strip()}"
    match = _TASK_FAILURE.search(text)
    if match:
        return f"{match.group(1)}: {match.group(2).split('. ')[0]}"
    first = text.strip().splitlines()[0] if text.strip() else "no message"
    return _QUERY_PREFIX.sub("", first)
