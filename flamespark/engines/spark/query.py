"""Compiling a graph to one Structured Streaming query, and running it to the end of its input."""
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from pyspark.sql import functions as F

from flamespark import errors
from flamespark.engines.spark.collector import BatchCollector, assemble
from flamespark.engines.spark.processors import (
    BarrierProcessor,
    BufferedStageProcessor,
    IngestProcessor,
    StageProcessor,
)
from flamespark.engines.spark.replay import ReplaySource, write_replay_file
from flamespark.engines.spark.rows import (
    END_OF_TIME_MS,
    EVENT_TIME_SHIFT_MS,
    INFINITY,
    ITEM,
    LATE,
    METRIC,
    OUT,
    PUNCT,
    ROW_SCHEMA,
    TIMED_SCHEMA,
)
from flamespark.engines.spark.session import LOG_FILE, spark_session
from flamespark.engines.spark.topology import Topology
from flamespark.errors import FlameSparkError, InputError
from flamespark.ingest import check_event_time, check_input_names
from flamespark.items import Meta, encode
from flamespark.jsonl import read_events


def _encoded_events(source, events):
    """`(ts, payload bytes)` pairs, checked, from a JSONL path or an iterable of `(ts, payload)`."""
    if isinstance(events, (str, Path)):
        events = read_events(events)
    for position, event in enumerate(events):
        where = f"input {source!r}, event #{position}"
        try:
            ts, payload = event
        except (TypeError, ValueError):
            raise InputError(f"{where}: expected a (ts, payload) pair, got {event!r}") from None
        ts = check_event_time(ts, where)
        yield ts, encode(payload, source, Meta(ts, source, 0, ()))


def _process(stream, processor, group_column, timed=False, keep_event_time=False):
    """A keyed stage; `timed` ones run on event-time timers and may pass the event-time column on."""
    return stream.groupBy(group_column).transformWithStateInPandas(
        statefulProcessor=processor,
        outputStructType=TIMED_SCHEMA if keep_event_time else ROW_SCHEMA,
        outputMode="Append",
        timeMode="EventTime" if timed else "None",
        eventTimeColumnName="event_time" if keep_event_time else "",
    )


def _watermarked(stream, reorder_latency):
    """The baseline's event-time column and Spark watermark (see rows.TIMED_SCHEMA).

    Spark treats a row at or below its watermark as late; a delay of
    `reorder_latency + 1` ms makes its watermark equal to FlameSpark's
    punctuation, so both agree on what is late and what is final.
    """
    event_time = (
        F.when(F.col("kind") == ITEM, F.timestamp_millis(F.col("ts") + EVENT_TIME_SHIFT_MS))
        .when((F.col("kind") == PUNCT) & (F.col("ts") >= INFINITY), F.timestamp_millis(F.lit(END_OF_TIME_MS)))
        .otherwise(F.lit(None).cast("timestamp"))
    )
    return stream.withColumn("event_time", event_time).withWatermark("event_time", f"{reorder_latency + 1} milliseconds")


def build_query(spark, topology, replay_files, reorder_latency, late, rate, max_rows):
    """The streaming DataFrame: replay sources -> ingest -> stages -> barrier -> releases."""
    spark.dataSource.register(ReplaySource)
    streams = []
    for source, path in replay_files.items():
        reader = spark.readStream.format(ReplaySource.name()).option("path", str(path)).option("source", source)
        if rate:
            reader = reader.option("rate", str(rate))
        if max_rows:
            reader = reader.option("maxRowsPerBatch", str(max_rows))
        streams.append(reader.load())
    stream = streams[0]
    for other in streams[1:]:
        stream = stream.unionByName(other)
    stream = _process(stream, IngestProcessor(topology, reorder_latency, late), "target")
    buffered = topology.mode == "buffered"
    if buffered:
        stream = _watermarked(stream, reorder_latency)
    for stage in range(1, topology.stages + 1):
        if buffered:
            stream = _process(stream, BufferedStageProcessor(topology, stage), "shard", True, True)
        else:
            stream = _process(stream, StageProcessor(topology, stage), "shard")
    stream = _process(stream, BarrierProcessor(topology, timed=buffered), "shard", timed=buffered)
    return stream.filter(stream.kind.isin(OUT, LATE, METRIC))


def run_spark(graph, inputs, mode="optimistic", reorder_latency=0, late="drop", rate=None, master=None,
              checkpoint=None, spark=None, shards=None, timeout=None, max_rows_per_batch=None, progress=None):
    """Run `graph` as one Spark Structured Streaming query; returns the same Result as the local engine.

    `inputs` maps source names to a JSONL path or an iterable of `(ts, payload)`.
    With `checkpoint`, a stopped run resumes from it and ends with exactly the
    output of an uninterrupted one; without, a temporary directory is used.
    """
    graph.validate()
    check_input_names(graph.sources, inputs)
    workdir = Path(checkpoint) if checkpoint else Path(tempfile.mkdtemp(prefix="flamespark-"))
    try:
        spark = spark or spark_session(master, shards)
        shards = shards or int(spark.conf.get("spark.sql.shuffle.partitions"))
        topology = Topology(graph, mode, shards)
        replay_files = {}
        (workdir / "inputs").mkdir(parents=True, exist_ok=True)
        for index, source in enumerate(graph.sources):
            replay_files[source] = workdir / "inputs" / f"source-{index}.msgpack"
            write_replay_file(replay_files[source], _encoded_events(source, inputs[source]))
        stream = build_query(spark, topology, replay_files, reorder_latency, late, rate, max_rows_per_batch)
        collector = BatchCollector(workdir / "parts", graph.sinks,
                                   progress=sys.stderr.isatty() if progress is None else progress)
        started = time.perf_counter()
        query = (
            stream.writeStream.foreachBatch(collector)
            .trigger(availableNow=True)
            .option("checkpointLocation", str(workdir / "checkpoint"))
            .queryName(f"flamespark_{graph.name}")
            .start()
        )
        try:
            _await(query, timeout)
        finally:
            if collector.progress:
                sys.stderr.write("\n")
        wall_s = time.perf_counter() - started
        return assemble(collector.parts(), graph.sinks, query.recentProgress, wall_s, paced=bool(rate))
    finally:
        if not checkpoint:
            shutil.rmtree(workdir, ignore_errors=True)


def _await(query, timeout):
    try:
        finished = query.awaitTermination(timeout)
    except Exception as exc:  # a StreamingQueryException wraps the worker's error
        raise _translate(exc) from None
    if finished is False:
        query.stop()
        raise FlameSparkError(f"the Spark query did not finish within {timeout} s and was stopped")


_ERROR_LINE = re.compile(r"flamespark\.errors\.(\w+): (.*)")
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
