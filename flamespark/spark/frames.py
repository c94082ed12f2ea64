"""`stream` and `payloads`: a graph as one transformation of a user's DataFrames, planned on the driver."""
from __future__ import annotations

import hashlib
import json

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from flamespark.core.errors import InputError, OptionError
from flamespark.engines.by_value import register_noted
from flamespark.engines.spark.levels import Levels
from flamespark.engines.spark.processors import STATE_LAYOUT
from flamespark.engines.spark.query import build_stages
from flamespark.engines.spark.session import ROCKSDB_PROVIDER
from flamespark.engines.spark.topology import Topology
from flamespark.io.inputs import check_input_names
from flamespark.runtime.options import RunOptions
from flamespark.spark.events import check_columns, end_rows, event_rows
from flamespark.spark.ingest import PartitionIngest
from flamespark.spark.released import RELEASED, ReleasedRows, output_schema

_PROVIDER_KEY = "spark.sql.streaming.stateStore.providerClass"
# The metadata of the output's `sink` column: the graph's sinks, which `payloads` checks a sink name against.
SINKS_METADATA = "flamespark.sinks"


def stream(graph, inputs: dict, *, event_time, reorder_latency, mode="optimistic", late="drop", changes=False,
           shards=None) -> DataFrame:
    """`graph` over the DataFrames `inputs` (`{source: DataFrame}`), as one DataFrame of its results.

    Each row of an input is an event: its time is the column `event_time`
    (a LONG of milliseconds or a TIMESTAMP; a dict `{source: column}` names
    one per source), its payload the row as a dict of its columns. The
    inputs are all streaming DataFrames (the result is one, for
    `writeStream`) or all static ones (the result is static too: a static
    input ends, so everything is released). `reorder_latency` (ms, one
    value), `mode`, `late` and `changes` mean what they mean to
    `flamespark.run`; static inputs take the optimistic mode only, since
    the buffered one releases as Spark's watermark rises and a static query
    has no watermark. `shards` is the number of shards the keys are spread
    over (default: the session's `spark.sql.shuffle.partitions`).

    The result has the columns `sink`, `ts` (the output's event time),
    `payload` (JSON), `order_key` (sorting by it gives the barrier's release
    order) and `kind`: "out" for a released output, "late" for a dead letter
    (late policy "drop"; its payload names source, ts, payload and
    punctuation) and, with `changes=True`, "change" for a changelog record,
    whose `op` ("+" or "-") and `cause` (the event that made a "-", as JSON) are
    then columns too (null on other rows). In the optimistic mode a
    micro-batch releases exactly what the punctuations reach in it (the
    buffered mode, a batch later: Spark's watermark lags a batch): in a
    stream with no end, a window is final (and released) once events later
    than its end by the reorder latency have come, in every source.

    Every option and input is checked before anything is planned: a bad one
    raises OptionError, naming it. The stages, the barrier and their state
    run in the query that writes the result, so its `checkpointLocation`
    makes a stopped or killed query resume exactly.

    >>> import flamespark as fs
    >>> from flamespark.spark import stream
    >>> from pyspark.sql import SparkSession
    >>> spark = (SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", "2")
    ...          .config("spark.sql.streaming.stateStore.providerClass",
    ...                  "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
    ...          .getOrCreate())
    >>> g = fs.Graph("totals")
    >>> g.source("readings").tumbling_window(key=lambda r: r["sensor"], size=10).count().sink("counts")
    >>> # (1, "a") comes 2 ms behind (3, "a"): within the reorder latency, however Spark splits the rows
    >>> readings = spark.createDataFrame([(3, "a"), (1, "a"), (12, "b"), (14, "a")], "ts LONG, sensor STRING")
    >>> out = stream(g, {"readings": readings}, event_time="ts", reorder_latency=5)
    >>> for row in out.where("kind = 'out'").orderBy("order_key").collect():
    ...     print(row.sink, row.ts, row.payload)
    counts 9 {"key":"a","start":0,"end":10,"value":2}
    counts 19 {"key":"b","start":10,"end":20,"value":1}
    counts 19 {"key":"a","start":10,"end":20,"value":1}

    A stream is written as Spark writes any (`docs/dataframes.md` has the whole example):

        events = spark.readStream.schema("ts LONG, sensor STRING").json("incoming/")
        out = stream(g, {"readings": events}, event_time="ts", reorder_latency=3000)
        out.writeStream.format("parquet").option("checkpointLocation", "ck/").start("results/")
    """
    options = RunOptions.of("spark", mode, reorder_latency, late, changes=changes, shards=shards)
    if len(options.latencies) > 1:
        raise OptionError(f"stream takes one reorder latency, got {reorder_latency!r}: the corrections of several "
                          f"latencies are made on the driver, which a query writing a DataFrame does not have "
                          f"(use flamespark.run(engine='spark') for them)")
    if shards is not None and (isinstance(shards, bool) or not isinstance(shards, int) or shards < 1):
        raise OptionError(f"shards must be a positive integer, got {shards!r}")
    graph.validate()
    times = _check_inputs(graph, inputs, event_time)
    streaming = next(iter(inputs.values())).isStreaming
    if options.mode == "buffered" and not streaming:
        raise OptionError("mode 'buffered' takes streaming DataFrames only: its stages release on event-time timers, "
                          "which fire as a streaming query's watermark rises, and a static query has no watermark, "
                          "so it would release nothing; give the inputs as streams (spark.readStream), or run static "
                          "DataFrames in mode 'optimistic'")
    spark = next(iter(inputs.values())).sparkSession
    if spark.conf.get(_PROVIDER_KEY) != ROCKSDB_PROVIDER:
        raise OptionError(f"FlameSpark's stages keep their state with transformWithStateInPandas, which needs "
                          f"RocksDB's state store: set {_PROVIDER_KEY}={ROCKSDB_PROVIDER} on the session "
                          f"(spark.conf.set, or the builder's config) before calling stream")
    shards = shards or int(spark.conf.get("spark.sql.shuffle.partitions"))
    register_noted()
    topology = Topology(graph, options.mode, shards, levels=Levels(options.latencies, graph.sinks),
                        early=options.changes)
    # One ingest group per source, spread over the shards' tasks.
    keys = {source: topology.shard_keys[index % shards] for index, source in enumerate(graph.sources)}
    streams = {source: event_rows(source, inputs[source], times[source], keys[source]) for source in graph.sources}
    if not streaming:
        streams = {source: rows.unionByName(end_rows(spark, {source: keys[source]}))
                   for source, rows in streams.items()}
    claim = _claim(graph, options, shards, inputs, times)

    def ingest_processor(sources):
        return PartitionIngest(topology, sources, options.reorder_latency, options.late, options.changes, claim)

    released = build_stages(streams, list(graph.sources), topology, ingest_processor, options.changes)
    out = released.mapInArrow(ReleasedRows(options.changes), output_schema(options.changes))
    return out.withMetadata("sink", {SINKS_METADATA: list(graph.sinks)})


def _check_inputs(graph, inputs, event_time) -> dict:
    """Each source's event-time column, once the inputs are checked: one DataFrame per source, of one session,
    all streaming or all static, with columns a payload can carry (`events.check_columns`)."""
    if not isinstance(inputs, dict):
        raise OptionError(f"inputs must map each source to a DataFrame, got {type(inputs).__name__}")
    try:
        check_input_names(graph.sources, inputs)
    except InputError as exc:
        raise OptionError(str(exc)) from None
    if isinstance(event_time, dict):
        try:
            check_input_names(graph.sources, event_time)
        except InputError as exc:
            raise OptionError(f"event_time: {exc}") from None
        times = dict(event_time)
    else:
        times = dict.fromkeys(graph.sources, event_time)
    for source, frame in inputs.items():
        if not isinstance(frame, DataFrame):
            raise OptionError(f"input {source!r} must be a PySpark DataFrame, got {type(frame).__name__}")
        check_columns(source, frame, times[source])
    sessions = {id(frame.sparkSession) for frame in inputs.values()}
    if len(sessions) > 1:
        raise OptionError("the inputs belong to different SparkSessions: one query runs in one session")
    streaming = sorted(source for source, frame in inputs.items() if frame.isStreaming)
    if streaming and len(streaming) < len(inputs):
        static = sorted(set(inputs) - set(streaming))
        raise OptionError(f"inputs {', '.join(map(repr, streaming))} are streaming DataFrames and "
                          f"{', '.join(map(repr, static))} static ones: Spark cannot union the two kinds, so give "
                          f"all as streams (spark.readStream) or all as static DataFrames")
    return times


def _claim(graph, options: RunOptions, shards: int, inputs: dict, times: dict) -> str:
    """A digest of what the query's state depends on, which its ingest checks on every batch (see
    `PartitionIngest`)."""
    described = {
        "graph": graph.to_dot(), "mode": options.mode, "reorder_latency": options.reorder_latency,
        "late": options.late, "changes": options.changes, "shards": shards, "state_layout": STATE_LAYOUT,
        "inputs": {source: [times[source], frame.schema.simpleString()] for source, frame in inputs.items()},
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


def payloads(out: DataFrame, sink: str, schema: str) -> DataFrame:
    """The outputs that `out` (a result of `stream`) released to `sink`, as the columns of the DDL `schema`.

    A dict payload's keys are matched to the schema's fields by name (a key
    the schema lacks is left out, a field the payload lacks is null); any
    other payload is the field `value`, as in the Parquet files of
    `flamespark.run`.

    >>> import flamespark as fs
    >>> from flamespark.spark import payloads, stream
    >>> from pyspark.sql import SparkSession
    >>> spark = (SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", "2")
    ...          .config("spark.sql.streaming.stateStore.providerClass",
    ...                  "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
    ...          .getOrCreate())
    >>> g = fs.Graph("sizes")
    >>> g.source("words").map(lambda w: {"word": w["text"], "size": len(w["text"])}).sink("sizes")
    >>> words = spark.createDataFrame([(1, "to"), (2, "be")], "ts LONG, text STRING")
    >>> out = stream(g, {"words": words}, event_time="ts", reorder_latency=0)
    >>> payloads(out, "sizes", "word STRING, size INT").orderBy("word").collect()
    [Row(word='be', size=2), Row(word='to', size=2)]
    """
    missing = [name for name in ("sink", "payload", "kind") if name not in out.columns]
    if missing:
        raise OptionError(f"payloads takes a DataFrame made by flamespark.spark.stream; this one has no column "
                          f"{', '.join(map(repr, missing))}")
    sinks = out.schema["sink"].metadata.get(SINKS_METADATA)
    if sinks is not None and sink not in sinks:
        raise OptionError(f"no sink named {sink!r}; the graph's sinks are {sinks}")
    payload = F.col("payload")
    as_object = F.when(payload.startswith("{"), payload).otherwise(F.concat(F.lit('{"value":'), payload, F.lit("}")))
    try:
        return (out.where((F.col("kind") == RELEASED) & (F.col("sink") == sink))
                .select(F.from_json(as_object, schema).alias("payload")).select("payload.*"))
    except AnalysisException as exc:
        raise OptionError(f"payloads of sink {sink!r}: schema {schema!r} is no DDL schema of named columns "
                          f"({str(exc).splitlines()[0]})") from None
