"""`flamespark.spark.stream` on a real local session: a graph over a user's DataFrames, as one DataFrame.

Streams are JSON files read by Spark's file source one file a micro-batch
(`maxFilesPerTrigger=1`), each file one input partition, so each batch's
partition holds a file's events in their order. A stream has no end: every
source's last file ends with an event far ahead, whose punctuation passes
every output of the events before it, and what the local engine releases
over those events (whose input ends) is what the stream must release.
Spark queries cost seconds each, so few run: one per mode and drawn
disorder for every graph at once, one for the buffered mode's changelog,
one static query, three for restarts.
"""
import dataclasses
import datetime
import json
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from decimal import Decimal
from operator import itemgetter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.errors import StreamingQueryException

import flamespark as fs
from flamespark.engines.spark.session import ROCKSDB_PROVIDER
from flamespark.graph import graph_node_id
from flamespark.io.jsonl import dumps
from flamespark.spark import payloads, stream
from tests import processes
from tests.processes import wait_for
from tests.spark import frames_query
from tests.spark import test_windows_spark as windows
from tests.spark.test_spark import all_graphs, disorder, in_order_inputs

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 900
LATENCY = windows.LATENCY
FAR = 10**6  # the far event's time: far past every output of the others, its own outputs at or after it
NUMBERS = "ts LONG, value LONG"
SCHEMAS = {"numbers": NUMBERS, "left": NUMBERS, "right": NUMBERS, "docs": "ts LONG, id LONG, words ARRAY<STRING>",
           **frames_query.SOURCES}
FAR_PAYLOADS = {"numbers": {"value": 0}, "left": {"value": 0}, "right": {"value": 0},
                "docs": {"id": -1, "words": ["far"]}, "events": {"t": FAR, "k": 0, "v": 0},
                "clicks": {"t": FAR, "k": 0, "v": 0}}


def fed_by_rows(graph, sources) -> fs.Graph:
    """`graph` with each of `sources` (whose payloads are numbers) fed by rows `{"ts", "value"}`: a source of
    that name, and a map to the row's value that feeds what the source fed."""
    fed = fs.Graph(graph.name)
    for node_id, node in graph.nodes.items():
        if node.kind == "source" and node.name in sources:
            fed.source(node.name).map(itemgetter("value"), name=f"{node.name}_value")
        else:
            inputs = [f"{name}_value" if name in sources else name for name in node.inputs]
            fed.nodes[node_id] = dataclasses.replace(node, inputs=inputs)
    return fed


def every_graph() -> fs.Graph:
    """Every graph of tests/graphs.py and the windows and joins of test_windows_spark (whose `sums`, a name
    running_sum's sink has, renamed), as one graph over rows."""
    merged = all_graphs()
    renamed = {"sums": "window_sums"}
    for node in windows.graph().nodes.values():
        node = dataclasses.replace(node, name=renamed.get(node.name, node.name),
                                   inputs=[renamed.get(name, name) for name in node.inputs])
        node_id = graph_node_id(node.kind, node.name)
        assert merged.nodes.setdefault(node_id, node) is node, f"two graphs use the name {node_id!r}"
    return fed_by_rows(merged, ["numbers", "left", "right"])


def as_rows(events: dict) -> dict:
    """Each source's `(ts, payload)` events with the payloads as the rows of its DataFrame: `{"ts", **payload}`,
    a number as `{"ts", "value"}`."""
    return {source: [(ts, {"ts": ts, **(payload if isinstance(payload, dict) else {"value": payload})})
                     for ts, payload in pairs] for source, pairs in events.items()}


def chunks(events: list, count: int) -> list:
    size = -(-len(events) // count)
    return [events[start:start + size] for start in range(0, len(events), size)]


def file_streams(spark, directory: Path, sources) -> dict:
    return {source: spark.readStream.schema(SCHEMAS[source]).option("maxFilesPerTrigger", 1)
            .json(str(directory / "inputs" / source)) for source in sources}


class Batches:
    """`foreachBatch`: every micro-batch's rows, by batch."""

    def __init__(self):
        self.rows = {}

    def __call__(self, frame, batch_id):
        self.rows[batch_id] = [row.asDict() for row in frame.collect()]

    def released(self, sinks) -> dict:
        """Each sink's released payloads (as JSON values), each batch's sorted by `order_key`, batch after batch."""
        released = {sink: [] for sink in sinks}
        for batch_id in sorted(self.rows):
            for row in sorted((row for row in self.rows[batch_id] if row["kind"] == "out"),
                              key=itemgetter("order_key")):
                released[row["sink"]].append(json.loads(row["payload"]))
        return released

    def of_kind(self, kind: str) -> list:
        return [row for rows in self.rows.values() for row in rows if row["kind"] == kind]


def as_json(outputs: dict) -> dict:
    """Outputs as the output DataFrame's JSON gives them back (tuples as lists)."""
    return {sink: [json.loads(dumps(payload)) for payload in payloads] for sink, payloads in outputs.items()}


def check_changelog(rows: list):
    """Replayed, the changelog among the output `rows` (dicts) holds every released output once, and beside
    them only outputs that the far events' punctuation has not passed: what a batch wrote twice, or lost,
    would show."""
    live, released = Counter(), Counter()
    for row in rows:
        entry = (row["sink"], row["ts"], row["payload"])
        if row["kind"] == "change":
            live[entry] += 1 if row["op"] == "+" else -1
        elif row["kind"] == "out":
            released[entry] += 1
    final = FAR - LATENCY - 1
    assert +Counter({entry: count for entry, count in live.items() if entry[1] <= final}) == released


def run_to_the_end(out, checkpoint: Path, batches: Batches):
    query = (out.writeStream.foreachBatch(batches).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(TIMEOUT)


# --- the same outputs as the local engine --------------------------------------------------------------

@pytest.mark.parametrize("mode", ["optimistic", "buffered"])
@settings(max_examples=1, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(rnd=st.randoms(use_true_random=False))
def test_a_stream_of_files_releases_what_the_local_engine_releases(spark, mode, rnd):
    graph = every_graph()
    events = in_order_inputs(rnd)
    events.update(events=windows.in_order(rnd, 30), clicks=windows.in_order(rnd, 12))
    arrival = as_rows({source: disorder(pairs, LATENCY, rnd) for source, pairs in events.items()})
    far = as_rows({source: [(FAR, payload)] for source, payload in FAR_PAYLOADS.items()})
    batches = Batches()
    with tempfile.TemporaryDirectory() as directory:
        directory = Path(directory)
        for source, rows in arrival.items():
            frames_query.write_files(directory, source, chunks(rows + far[source], 3))
        out = stream(graph, file_streams(spark, directory, arrival), event_time="ts", reorder_latency=LATENCY,
                     mode=mode, changes=True, shards=2)
        run_to_the_end(out, directory / "checkpoint", batches)
    local = fs.run(graph, arrival, reorder_latency=LATENCY, mode=mode)
    assert batches.released(graph.sinks) == as_json(local.outputs)
    assert len(batches.rows) >= 3
    assert batches.of_kind("late") == []
    check_changelog([row for rows in batches.rows.values() for row in rows])
    # Every `-` names the event that made it (source, time, place in its source's arrival order), as the local
    # engine's do; here only the optimistic mode retracts (the test below has the buffered mode's `-`).
    retracted = [json.loads(row["cause"]) for row in batches.of_kind("change") if row["op"] == "-"]
    assert retracted or mode == "buffered"
    times = {source: [ts for ts, _ in arrival[source] + far[source]] for source in arrival}
    assert all(times[cause["source"]][cause["position"]] == cause["ts"] for cause in retracted)


def test_a_buffered_stream_names_the_causes_of_its_changes_as_the_local_engine_does(spark, tmp_path):
    """A buffered window's running value, retracted as its buffer releases the window's next event, names that
    event, as on the local engine: Spark's buffers keep their rows' causes. One event a file, so a micro-batch,
    and the local engine's batches of one: both release the same events together (Spark's watermark a batch
    later), so both changelogs hold the same records."""
    g = fs.Graph("running")
    g.source("numbers").tumbling_window(key=itemgetter("k"), size=10).count().sink("counts")
    events = [(ts, {"ts": ts, "k": key})
              for ts, key in [(1, "a"), (4, "a"), (3, "a"), (6, "b"), (8, "a"), (12, "a"), (20, "a"), (FAR, "a")]]
    frames_query.write_files(tmp_path, "numbers", [[event] for event in events])
    numbers = (spark.readStream.schema("ts LONG, k STRING").option("maxFilesPerTrigger", 1)
               .json(str(tmp_path / "inputs" / "numbers")))
    batches = Batches()
    out = stream(g, {"numbers": numbers}, event_time="ts", reorder_latency=2, mode="buffered", changes=True)
    run_to_the_end(out, tmp_path / "checkpoint", batches)
    local = fs.run(g, {"numbers": events}, reorder_latency=2, mode="buffered", changes=True, batch_size=1)

    def record(op, ts, payload, cause):
        return op, ts, json.dumps(payload, sort_keys=True), json.dumps(cause, sort_keys=True)

    on_spark = Counter(record(row["op"], row["ts"], json.loads(row["payload"]),
                              None if row["cause"] is None else json.loads(row["cause"]))
                       for row in batches.of_kind("change"))
    # The far event's window is final only for the local run, whose input ends.
    on_local = Counter(record(**change) for change in local.changes["counts"] if change["ts"] < FAR)
    assert on_spark == on_local
    assert [cause for op, _, _, cause in on_local if op == "-"] == [
        json.dumps({"source": "numbers", "ts": ts, "position": position}, sort_keys=True)
        for ts, position in [(3, 2), (4, 1), (8, 4)]]


def test_with_one_file_a_batch_events_are_late_as_the_local_engine_judges_them(spark, tmp_path):
    """Late behind the newest event of an earlier batch, and behind one earlier in the same file: dropped, as a
    local run over the files one after the other drops them; the dead letters come out as rows."""
    g = fs.Graph("late")
    g.source("numbers").map(itemgetter("value"), name="numbers_value").sink("values")
    files = [[(10, 1), (30, 2)], [(15, 3), (40, 4), (20, 5), (36, 6)], [(FAR, 7)]]  # 15: behind 30; 20: behind 40
    rows = [as_rows({"numbers": [(ts, {"value": value}) for ts, value in chunk]})["numbers"] for chunk in files]
    frames_query.write_files(tmp_path, "numbers", rows)
    batches = Batches()
    out = stream(g, file_streams(spark, tmp_path, ["numbers"]), event_time="ts", reorder_latency=5)
    run_to_the_end(out, tmp_path / "checkpoint", batches)
    local = fs.run(g, {"numbers": [pair for chunk in rows for pair in chunk]}, reorder_latency=5)
    assert [dead["ts"] for dead in local.late] == [15, 20]
    assert [json.loads(row["payload"]) for row in batches.of_kind("late")] == local.late
    assert batches.released(g.sinks) == {"values": local.outputs["values"][:-1]}  # FAR's output is not final


def test_static_inputs_end_and_release_everything_with_payloads_as_their_columns(spark):
    """Two static DataFrames, joined: the result is static too, holds every output of the local run, and a
    sink's payloads come typed. Timestamps (the event time too) are milliseconds, dates ISO strings, maps and
    structs dicts."""
    g = fs.Graph("joined_rows")
    left, right = g.source("left"), g.source("right")
    left.interval_join(right, key=itemgetter("k"), within=(-5, 5), how="left", name="pairs").sink("pairs")
    left.map(lambda row: {"k": row["k"], "ms": row["at"], "day": row["day"], "tags": row["tags"],
                          "point": row["point"], "blob": row["blob"].hex()}, name="typed").sink("typed")
    at = datetime.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=datetime.timezone.utc)
    ms = int(at.timestamp() * 1000)
    lefts = [(at + datetime.timedelta(milliseconds=delay), key, datetime.date(2026, 1, 2), {"a": key}, (key, "p"),
              bytes([key])) for delay, key in [(3, 1), (0, 2), (9, 1), (20, 2)]]
    rights = [(ms + delay, key) for delay, key in [(4, 1), (1, 2), (30, 2)]]
    left_frame = spark.createDataFrame(lefts, "at TIMESTAMP, k INT, day DATE, tags MAP<STRING, INT>, "
                                              "point STRUCT<x: INT, y: STRING>, blob BINARY")
    right_frame = spark.createDataFrame(rights, "ms LONG, k INT")
    out = stream(g, {"left": left_frame, "right": right_frame}, event_time={"left": "at", "right": "ms"},
                 reorder_latency=10)
    assert not out.isStreaming
    rows = sorted(out.collect(), key=itemgetter("order_key"))
    assert {row.kind for row in rows} == {"out"}
    local = fs.run(g, {"left": [(ms + delay, {"at": ms + delay, "k": key, "day": "2026-01-02", "tags": {"a": key},
                                              "point": {"x": key, "y": "p"}, "blob": bytes([key])})
                                for delay, key in [(3, 1), (0, 2), (9, 1), (20, 2)]],
                       "right": [(ms + delay, {"ms": ms + delay, "k": key}) for delay, key in [(4, 1), (1, 2), (30, 2)]]},
                   reorder_latency=10)
    assert {sink: [json.loads(row.payload) for row in rows if row.sink == sink] for sink in g.sinks} == \
        as_json(local.outputs)
    typed = payloads(out, "typed", "k INT, ms LONG, day DATE, point STRUCT<x: INT, y: STRING>").orderBy("ms")
    assert [tuple(row) for row in typed.collect()] == [
        (2, ms, datetime.date(2026, 1, 2), (2, "p")), (1, ms + 3, datetime.date(2026, 1, 2), (1, "p")),
        (1, ms + 9, datetime.date(2026, 1, 2), (1, "p")), (2, ms + 20, datetime.date(2026, 1, 2), (2, "p"))]


# --- restarts: stopped, killed ------------------------------------------------------------------------

def restart_inputs() -> dict:
    """Six files per source of the windows-and-join graph's inputs, disordered, the last with a far event."""
    import random

    rnd = random.Random(5)
    events = {"events": windows.in_order(rnd, 36), "clicks": windows.in_order(rnd, 18)}
    rows = as_rows({source: windows.disorder(pairs, rnd) + [(FAR, FAR_PAYLOADS[source])]
                    for source, pairs in events.items()})
    return {source: chunks(pairs, 6) for source, pairs in rows.items()}


def written(spark, directory: Path) -> Counter:
    """The outputs released in the query's Parquet file sink, as its metadata log has them (the files of its
    committed batches), once its changelog is checked against them (`check_changelog`).

    Only the outputs must be those of an uninterrupted run: a batch whose
    planning a stop cut short may, rerun, read the file it had listed with
    the next (Spark's file source logs its files before the query logs the
    batch), and the changelog's steps are batches.
    """
    rows = [row.asDict() for row in spark.read.parquet(str(directory / "results")).collect()]
    check_changelog(rows)
    assert {row["kind"] for row in rows} == {"out", "change"}
    return Counter((row["sink"], row["ts"], row["payload"], row["order_key"]) for row in rows if row["kind"] == "out")


@pytest.fixture(scope="module")
def uninterrupted(spark, tmp_path_factory):
    """The outputs the restart tests' query releases when nothing stops it."""
    directory = tmp_path_factory.mktemp("uninterrupted")
    for source, files in restart_inputs().items():
        frames_query.write_files(directory, source, files)
    frames_query.start(spark, directory, {"availableNow": True}).awaitTermination(TIMEOUT)
    released = written(spark, directory)
    assert max(released.values()) == 1 and len(released) > 20
    return released


def commits(directory: Path) -> int:
    folder = directory / "checkpoint" / "commits"
    return sum(1 for entry in folder.iterdir() if entry.name.isdigit()) if folder.is_dir() else 0


def finish(spark, directory: Path) -> Counter:
    """Add the files not yet given, run the query on its checkpoint to their end: the outputs it wrote."""
    for source, files in restart_inputs().items():
        frames_query.write_files(directory, source, files[3:], first=3)
    frames_query.start(spark, directory, {"availableNow": True}).awaitTermination(TIMEOUT)
    return written(spark, directory)


def first_half(directory: Path):
    for source, files in restart_inputs().items():
        frames_query.write_files(directory, source, files[:3])


def test_a_query_stopped_after_some_batches_resumes_to_the_uninterrupted_rows(spark, tmp_path, uninterrupted):
    first_half(tmp_path)
    query = frames_query.start(spark, tmp_path, {"processingTime": "0 seconds"})
    try:
        while commits(tmp_path) < 2:
            assert query.exception() is None and not query.awaitTermination(0.2)
    finally:
        query.stop()
    assert finish(spark, tmp_path) == uninterrupted
    # Resumed with another reorder latency, the checkpoint's state would be read by another plan: refused.
    frames_query.write_files(tmp_path, "events", [[(FAR + 1, {"ts": FAR + 1, **FAR_PAYLOADS["events"]})]], first=6)
    with pytest.raises(StreamingQueryException, match="written by a FlameSpark query with another graph, mode, "
                                                      "reorder latency"):
        frames_query.start(spark, tmp_path, {"availableNow": True}, LATENCY + 1).awaitTermination(TIMEOUT)


def test_a_query_killed_after_some_batches_resumes_to_the_uninterrupted_rows(spark, tmp_path, uninterrupted):
    first_half(tmp_path)
    stderr = tmp_path / "stderr.txt"
    with open(stderr, "wb") as log:
        process = processes.start([sys.executable, "-m", "tests.spark.frames_query", str(tmp_path)], cwd=REPO,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_for(lambda: commits(tmp_path) >= 2, process, stderr, "two committed micro-batches", TIMEOUT)
    finally:
        processes.stop(process)  # SIGKILL to the driver, its JVM and its Python workers
    assert process.returncode == -signal.SIGKILL
    assert finish(spark, tmp_path) == uninterrupted


# --- refused before anything is planned ---------------------------------------------------------------

def counts_graph() -> fs.Graph:
    g = fs.Graph("counts")
    g.source("docs").tumbling_window(key=itemgetter("doc_id"), size=10).count().sink("counts")
    return g


@pytest.fixture(scope="module")
def docs(spark):
    return spark.createDataFrame([(1, 7, "t", "x")], "ts LONG, doc_id LONG, title STRING, text STRING")


@pytest.mark.parametrize("inputs, options, message", [
    ("missing", {}, r"no input given for source\(s\) 'docs'"),
    ("unknown", {}, r"no source named 'clicks'"),
    ("docs", {"event_time": "time"}, r"input 'docs' has no event-time column 'time'; its columns are ts, doc_id"),
    ("docs", {"event_time": "title"}, r"event-time column 'title' of input 'docs' is STRING: it must be a LONG"),
    ("ints", {}, r"event-time column 'ts' of input 'docs' is INT"),
    ("decimals", {}, r"column 'price' of input 'docs' is DECIMAL\(10,2\), which a payload cannot carry: cast it to "
                     r"DOUBLE \(approximate\) or STRING"),
    ("nested", {}, r"column 'seen' of input 'docs' holds a TIMESTAMP inside"),
    ("list", {}, r"input 'docs' must be a PySpark DataFrame, got list"),
    ("docs", {"mode": "fast"}, r"mode must be one of optimistic, buffered, got 'fast'"),
    ("docs", {"mode": "buffered"}, r"mode 'buffered' takes streaming DataFrames only: its stages release on "
                                   r"event-time timers, .* a static query has no watermark"),
    ("docs", {"reorder_latency": -1}, r"reorder_latency must be a non-negative integer"),
    ("docs", {"late": "keep"}, r"late policy must be one of drop, adjust, fail"),
    ("docs", {"changes": 1}, r"changes must be True or False"),
    ("docs", {"reorder_latency": (10, 100)}, r"stream takes one reorder latency"),
    ("docs", {"shards": 0}, r"shards must be a positive integer, got 0"),
])
def test_bad_inputs_and_options_are_refused_naming_them(spark, docs, inputs, options, message):
    frames = {
        "docs": {"docs": docs}, "missing": {}, "unknown": {"docs": docs, "clicks": docs}, "list": {"docs": [(1, {})]},
        "ints": {"docs": spark.createDataFrame([(1,)], "ts INT")},
        "decimals": {"docs": spark.createDataFrame([(1, Decimal("2.50"))], "ts LONG, price DECIMAL(10, 2)")},
        "nested": {"docs": spark.createDataFrame([(1, [datetime.datetime(2026, 1, 1)])],
                                                 "ts LONG, seen ARRAY<TIMESTAMP>")},
    }[inputs]
    arguments = {"event_time": "ts", "reorder_latency": 10, **options}
    with pytest.raises(fs.OptionError, match=message):
        stream(counts_graph(), frames, **arguments)


def test_a_mix_of_streams_and_static_frames_is_refused(spark, docs, tmp_path):
    g = fs.Graph("two")
    g.source("a").union(g.source("b")).sink("both")
    streaming = spark.readStream.schema("ts LONG").json(str(tmp_path))
    with pytest.raises(fs.OptionError, match=r"inputs 'a' are streaming DataFrames and 'b' static ones"):
        stream(g, {"a": streaming, "b": docs.select("ts")}, event_time="ts", reorder_latency=0)


def test_a_session_without_rocksdb_state_is_refused(spark, docs):
    key = "spark.sql.streaming.stateStore.providerClass"
    spark.conf.unset(key)
    try:
        with pytest.raises(fs.OptionError, match=rf"needs RocksDB's state store: set {key}={ROCKSDB_PROVIDER}"):
            stream(counts_graph(), {"docs": docs}, event_time="ts", reorder_latency=0)
    finally:
        spark.conf.set(key, ROCKSDB_PROVIDER)


def test_a_late_event_under_fail_and_a_null_event_time_fail_the_query_naming_them(spark):
    schema = "ts LONG, doc_id LONG, title STRING, text STRING"
    late = spark.createDataFrame([(50, 7, "t", "x"), (1, 7, "t", "x")], schema).coalesce(1)  # one partition
    with pytest.raises(Exception, match=r"LateEventError: event ts=1 of source 'docs' \(position 1 in its arrival "
                                        r"order\) arrived after punctuation 39"):
        stream(counts_graph(), {"docs": late}, event_time="ts", reorder_latency=10, late="fail").collect()
    null = spark.createDataFrame([(None, 7, "t", "x")], schema).coalesce(1)
    with pytest.raises(Exception, match=r"InputError: input 'docs': row 0 of partition 0 has a null event time 'ts'"):
        stream(counts_graph(), {"docs": null}, event_time="ts", reorder_latency=10).collect()


def test_payloads_refuse_an_unknown_sink_a_bad_schema_and_a_frame_of_another_kind(spark, docs):
    out = stream(counts_graph(), {"docs": docs}, event_time="ts", reorder_latency=0)
    with pytest.raises(fs.OptionError, match=r"no sink named 'totals'; the graph's sinks are \['counts'\]"):
        payloads(out, "totals", "key LONG")
    with pytest.raises(fs.OptionError, match=r"schema 'key LONG,,' is no DDL schema"):
        payloads(out, "counts", "key LONG,,")
    with pytest.raises(fs.OptionError, match=r"made by flamespark.spark.stream; this one has no column 'sink'"):
        payloads(docs, "counts", "key LONG")


# --- the example, as a user runs it -----------------------------------------------------------------

def test_the_dataframes_example_runs_from_the_repository_root(tmp_path):
    done = processes.run([sys.executable, "examples/spark_dataframes.py", str(tmp_path / "work")], cwd=REPO,
                         timeout=TIMEOUT, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    lines = done.stdout.decode().splitlines()
    assert any(line.startswith("clicks_per_minute:") for line in lines), lines
    assert (tmp_path / "work" / "results" / "_spark_metadata").is_dir()
