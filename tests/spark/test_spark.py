"""The Spark engine on a real local session: exactness, release timing, late events, errors, restart, CLI.

Every streaming query costs seconds of fixed overhead (its first micro-batch
far more), so the module runs few of them: one session for all in-process
tests, all graphs of tests/graphs.py in one query per mode and disorder
(hypothesis draws four disorders per mode), and one
uninterrupted CLI-equivalent run shared by the timing, late-event and
restart tests. Batch boundaries are fixed with `max_rows_per_batch`.
Lateness is judged per ingest partition; tests that compare dead letters
with the local engine's ingest in one partition, where both judge alike.
"""
import gc
import json
import math
import os
import pty
import random
import re
import signal
import subprocess
import sys
import tempfile
from argparse import Namespace
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import msgpack
from pyspark.sql import functions as F

import flamespark as fs
from flamespark.cli import main
from benchmarks import inverted_index_tuned
from flamespark.engines.spark.partitioning import spark_partition, spread_keys
from flamespark.engines.spark.session import LOG_FILE, check_java
from flamespark.engines.spark.topology import Topology
from flamespark.tools.runner import run_to_directory
from tests import graphs, processes
from tests.graphs import running_sum_update
from tests.processes import wait_for
from tests.oracles.changelog_checks import check_changelog
from tests.oracles.reference import reference_run

REPO = Path(__file__).resolve().parents[2]
PIPELINE = "examples/running_sum.py:graph"
TIMEOUT = 900

# The running-sum example's input: two sensors in event-time order, and two readings
# far behind the newest one at the start of micro-batches 1 and 2 (4 rows a batch).
LATENCY, PER_BATCH = 15, 4
READINGS = [(0, "a"), (10, "b"), (20, "a"), (30, "b"), (5, "b"), (40, "a"), (50, "b"), (60, "a"),
            (35, "a"), (70, "b"), (80, "a"), (90, "b"), (100, "a"), (110, "b"), (120, "a")]


def run_spark(graph, inputs, spark, **options):
    return fs.run(graph, inputs, engine="spark", spark=spark, shards=2, timeout=TIMEOUT, **options)


# --- exactness ---------------------------------------------------------------------------

def all_graphs():
    """Every graph of tests/graphs.py as one graph (sources shared by name), so one query runs them all."""
    merged = fs.Graph("all_graphs")
    for build in (graphs.running_sum, graphs.window3, graphs.chained_stateful, graphs.tally_in_place,
                  graphs.fanout_collector, graphs.sharded_collectors, graphs.two_sources):
        for node in build().nodes.values():
            known = merged.nodes.setdefault(node.name, node)
            assert known is node or node.kind == "source", f"two graphs use the name {node.name!r}"
    return merged


def in_order_inputs(rnd):
    """Inputs for every source of `all_graphs()`, in event-time order, with equal times."""
    def numbers(count):
        ts, events = 0, []
        for _ in range(count):
            ts += rnd.randint(0, 3)
            events.append((ts, rnd.randint(0, 20)))
        return events

    words = ("ant", "bee", "cat", "dog", "eel")
    times = sorted(rnd.randint(0, 40) for _ in range(10))
    docs = [(ts, {"id": i, "words": rnd.choices(words, k=rnd.randint(1, 4))}) for i, ts in enumerate(times)]
    # Identical events (one number three times), which several ingest partitions must tell apart.
    repeated = numbers(22)
    repeated[5:5] = [repeated[5]] * 2
    return {"numbers": repeated, "docs": docs, "left": numbers(12), "right": numbers(12)}


def disorder(events, latency, rnd):
    """An arrival order in which no event is more than `latency` behind the newest one."""
    delays = [rnd.randint(0, latency) for _ in events]
    return [events[i] for i in sorted(range(len(events)), key=lambda i: events[i][0] + delays[i])]


@pytest.mark.parametrize("mode", ["optimistic", "buffered"])
@settings(max_examples=4, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(rnd=st.randoms(use_true_random=False))
def test_all_graphs_match_the_in_order_run_and_the_local_engine(spark, mode, rnd):
    graph, latency = all_graphs(), 6
    events = in_order_inputs(rnd)
    arrival = {source: disorder(pairs, latency, rnd) for source, pairs in events.items()}
    assume(arrival != events)
    with tempfile.TemporaryDirectory() as out:
        result = run_spark(graph, arrival, spark, mode=mode, reorder_latency=latency, max_rows_per_batch=12,
                           ingest_partitions=3, changes=True, output=out)
        check_batch_files(Path(out), result)
    assert result.outputs == reference_run(graph, events)
    # Counted over every stage's part of the barrier.
    assert result.metrics["released"] == sum(len(values) for values in result.outputs.values())
    assert result.outputs == fs.run(graph, arrival, reorder_latency=latency).outputs
    check_changelog(result, arrival, union_sinks=["mixed"])
    assert result.late == []
    assert len(result.outputs["documents"]) == len(result.outputs["chunked_documents"]) == len(events["docs"])
    assert result.metrics["events"] == sum(map(len, events.values()))
    assert result.metrics["engine"]["batches"] >= 3
    if mode == "buffered":
        assert result.metrics["tombstones"] == 0


def test_a_late_event_in_a_later_batch_retracts_what_earlier_batches_computed(spark):
    """Spark applies a batch's items in meta order, so only lateness across batches makes it retract: here the
    event of ts 15 comes two batches after those of ts 20, 30 and 40 of its key, which the drawn disorders above
    may or may not do."""
    graph = graphs.running_sum()
    arrival = {"numbers": [(10, 3), (20, 6), (30, 9), (40, 12), (15, 15), (50, 18)]}
    result = run_spark(graph, arrival, spark, reorder_latency=30, max_rows_per_batch=2, ingest_partitions=1,
                       changes=True)
    assert result.outputs == reference_run(graph, {"numbers": sorted(arrival["numbers"])})
    assert result.outputs == {"sums": [3, 18, 24, 33, 45, 63]}
    assert result.metrics["engine"]["batches"] >= 3 and result.metrics["tombstones"] == 3
    retracted = [change for change in result.changes["sums"] if change["op"] == "-"]
    assert sorted(change["payload"] for change in retracted) == [9, 18, 30]
    assert all(change["cause"] == {"source": "numbers", "ts": 15, "position": 4} for change in retracted)


def test_in_one_ingest_partition_spark_judges_every_event_late_or_not_as_the_local_engine(spark):
    """Lateness depends on the arrival order alone: an event is judged against the newest before it, not against
    the punctuation before its micro-batch. Two batches of the issue's case, then a shuffled run with late events
    all over, several to a batch."""
    graph = graphs.running_sum()
    first = {"numbers": [(1000, 1), (500, 2)]}  # one batch: 500 is 500 ms behind 1000, more than 256
    on_spark = run_spark(graph, first, spark, reorder_latency=256, ingest_partitions=1)
    assert on_spark.outputs == fs.run(graph, first, reorder_latency=256).outputs == {"sums": [1]}
    assert [letter["ts"] for letter in on_spark.late] == [500]
    rnd = random.Random(60)
    arrival = [(value * 10 + rnd.randrange(0, 80), value) for value in range(60)]
    local = fs.run(graph, {"numbers": arrival}, reorder_latency=40)
    assert 5 < len(local.late) < 50
    for mode in ("optimistic", "buffered"):
        result = run_spark(graph, {"numbers": arrival}, spark, mode=mode, reorder_latency=40, max_rows_per_batch=7,
                           ingest_partitions=1)
        assert result.late == local.late, mode
        assert result.outputs == local.outputs, mode


def test_the_inverted_index_retracts_across_batches_and_ends_as_the_plain_program(spark):
    """The tuned inverted index's collector nodes know they are complete by their last part's index, which relies on each node
    seeing its parts in event-time order; here a late document re-runs them on Spark, batches later."""
    rnd = random.Random(3)
    vocabulary = [chr(97 + number // 26) + chr(97 + number % 26) for number in range(130)]  # letters only: aa, ab
    docs = []
    for doc_id in range(8):
        text = vocabulary[doc_id * 12:doc_id * 12 + 45]  # 45 words, two collector nodes, 33 shared with the next
        rnd.shuffle(text)
        docs.append((doc_id * 10, {"ts": doc_id * 10, "doc_id": doc_id, "title": "", "text": " ".join(text)}))
    arrival = [*docs[:2], *docs[3:7], docs[2], docs[7]]  # document 2 in the 4th batch, after 3 to 6 in the 2nd and 3rd
    result = run_spark(inverted_index_tuned.graph, {"docs": arrival}, spark, reorder_latency=50, max_rows_per_batch=2,
                       ingest_partitions=1, changes=True)
    assert result.outputs == inverted_index_tuned.in_order_index([payload for _, payload in docs])
    assert result.metrics["engine"]["batches"] >= 4
    assert any(change["op"] == "-" for change in result.changes["docs"])
    check_changelog(result, {"docs": arrival})


def check_batch_files(out: Path, result):
    """Batch by batch, what a sink has released is live in its changelog: an output is added no later than it
    is released; the per-batch files add up to the result (compared as JSON, which is what the files hold)."""
    def key(payload):
        return json.dumps(payload, sort_keys=True)

    for sink, outputs in result.outputs.items():
        released, live = Counter(), Counter()
        batches = sorted({path.name for path in (out / sink).glob("batch-*")} |
                         {path.name for path in (out / f"{sink}.changes").glob("batch-*")})
        for name in batches:
            if (out / sink / name).exists():
                released.update(map(key, read_jsonl(out / sink / name)))
            if (out / f"{sink}.changes" / name).exists():
                for record in read_jsonl(out / f"{sink}.changes" / name):
                    live[key(record["payload"])] += 1 if record["op"] == "+" else -1
            assert not released - live, f"{sink}: released before added, by {name}"
        assert released == live == Counter(map(key, outputs))


def test_replayed_sources_ingested_by_the_ingest_operator_match_the_in_order_run(spark):
    """With an idle timeout, replayed sources go through the ingest operator, not their read tasks; one that
    never passes keeps the output of the in-order run, identical events spread over partitions included."""
    rnd = random.Random(7)
    events = in_order_inputs(rnd)
    arrival = {source: disorder(pairs, 6, rnd) for source, pairs in events.items()}
    result = run_spark(all_graphs(), arrival, spark, reorder_latency=6, max_rows_per_batch=12, ingest_partitions=3,
                       idle_timeout=600)
    assert result.outputs == reference_run(all_graphs(), events)
    assert [stage["stage"] for stage in result.metrics["engine"]["batch_time"]["stages"]][0] == "0: ingest"
    assert result.metrics["events"] == sum(map(len, events.values()))


def test_shard_keys_go_to_distinct_spark_partitions(spark):
    for partitions in (1, 2, 3, 4, 8):
        keys = spread_keys(2 * partitions, partitions)
        assert len(set(keys)) == len(keys) and 0 in keys[:partitions]
        assert [spark_partition(key, partitions) for key in keys] == [i % partitions for i in range(2 * partitions)]
    # The same partitions as Spark's own hash partitioning (Murmur3, seed 42) sends them to.
    frame = spark.createDataFrame([(key,) for key in range(-50, 200)], "key INT")
    spark_side = frame.select("key", F.expr("pmod(hash(key), 3)").alias("p")).collect()
    assert {row.key: row.p for row in spark_side} == {key: spark_partition(key, 3) for key in range(-50, 200)}


def test_ingest_runs_per_ingest_partition_and_replays_a_batch_alike(spark, tmp_path):
    arrival = {"numbers": [(ts, ts % 5) for ts in range(0, 60, 3)]}

    def run():
        return run_spark(graphs.running_sum(), arrival, spark, checkpoint=tmp_path, ingest_partitions=3,
                         max_rows_per_batch=6)

    result = run()
    assert result.outputs == reference_run(graphs.running_sum(), arrival)  # the events come in order
    parts = sorted(tmp_path.glob("parts/batch-*.msgpack"))
    ingest = {}
    for part in parts:
        for stage, _, payload in msgpack.unpackb(part.read_bytes())["metrics"]:
            if stage == "ingest":  # each batch counts its own events
                counts = msgpack.unpackb(payload)
                ingest[counts["partition"]] = ingest.get(counts["partition"], 0) + counts["events"]
    # Events spread by position: 20 events over 3 partitions.
    assert sorted(ingest.values()) == [6, 7, 7] and len(ingest) == 3

    last, replayed = replay_the_last_batch(tmp_path, run, result)
    ingest_rows = [[row for row in part["metrics"] if row[0] == "ingest"] for part in (replayed, last)]
    assert sorted(ingest_rows[0]) == sorted(ingest_rows[1]) != []


def replay_the_last_batch(checkpoint: Path, run, result):
    """Crash after the last batch wrote its part but before Spark committed it, then `run()` again: it must
    replay that batch, with the same releases. Returns the batch's part as written first and as replayed."""
    parts = sorted(checkpoint.glob("parts/batch-*.msgpack"))
    last = msgpack.unpackb(parts[-1].read_bytes())
    for name in (str(last["batch"]), f".{last['batch']}.crc"):
        (checkpoint / "checkpoint" / "commits" / name).unlink()
    parts[-1].unlink()
    assert run().outputs == result.outputs
    replayed = msgpack.unpackb(parts[-1].read_bytes())
    # The same releases (an unpaced event's arrival is when it was read, so it differs).
    assert [out[:2] for out in replayed["outputs"]] == [out[:2] for out in last["outputs"]] != []
    return last, replayed


@pytest.mark.parametrize("mode", ["optimistic", "buffered"])
def test_a_batch_through_a_fused_stage_replays_alike(spark, tmp_path, mode):
    graph = graphs.sharded_collectors()
    words = ("ant", "bee", "cat", "dog", "eel")
    events = [(ts, {"id": ts, "words": [words[(ts + i) % 5] for i in range(ts % 4 + 1)]}) for ts in range(0, 40, 2)]
    arrival = {"docs": disorder(events, 6, random.Random(3))}

    def run():
        return run_spark(graph, arrival, spark, mode=mode, reorder_latency=6, checkpoint=tmp_path / mode,
                         max_rows_per_batch=4)

    result = run()
    assert result.outputs == reference_run(graph, {"docs": events})
    assert len(result.outputs["chunked_documents"]) == len(events)
    stages = [stage["stage"] for stage in result.metrics["engine"]["batch_time"]["stages"]]
    assert any(stage.startswith("2: chunks") and "collect_chunks" in stage for stage in stages), stages
    replay_the_last_batch(tmp_path / mode, run, result)


# --- one uninterrupted run of the CLI's pipeline: release timing, late events, and the restart baseline

def write_readings(path):
    lines = [json.dumps({"ts": ts, "sensor": sensor, "value": ts + 1}) for ts, sensor in READINGS]
    path.write_text("".join(line + "\n" for line in lines))
    return path


def run_to(out, events, engine):
    """What `flamespark run` does for the CLI tests below (`cli_command`); the local engine refuses Spark's
    options."""
    batches = dict(max_rows_per_batch=PER_BATCH, ingest_partitions=1) if engine == "spark" else {}
    return run_to_directory(str(REPO / PIPELINE), {"readings": events}, out, engine=engine, reorder_latency=LATENCY,
                            changes=True, **batches)


def read_jsonl(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


@pytest.fixture(scope="module")
def readings(spark, tmp_path_factory):
    """The example pipeline run to DIR on Spark (this module's session) and on the local engine."""
    base = tmp_path_factory.mktemp("readings")
    events = write_readings(base / "events.jsonl")
    spark_out, local_out = base / "spark", base / "local"
    spark_result = run_to(spark_out, events, "spark")
    local_result = run_to(local_out, events, "local")
    return Namespace(events=events, spark=spark_out, local=local_out, metrics=spark_result.metrics,
                     local_metrics=local_result.metrics)


def spark_schedule(events, latency, per_batch):
    """What the engine must do, batch by batch, with one source and `per_batch` rows a batch.

    Lateness is judged against the punctuation of the previous batch; after a
    batch the source promises `newest - latency - 1`, or everything once the
    end-of-input row (row `len(events)`) was read. Returns the dead letters and,
    per kept event, how many batches after the one that read it it is final.
    """
    horizon, newest, pending, dead, delays = -math.inf, None, [], [], []
    for start in range(0, len(events) + 1, per_batch):
        batch = start // per_batch
        for ts, payload in events[start:start + per_batch]:
            if ts <= horizon:
                dead.append({"source": "readings", "ts": ts, "payload": payload, "punctuation": horizon})
                continue
            newest = ts if newest is None else max(newest, ts)
            pending.append((ts, batch))
        if start + per_batch > len(events):
            horizon = math.inf
        elif newest is not None:
            horizon = max(horizon, newest - latency - 1)
        delays.extend(batch - read for ts, read in pending if ts <= horizon)
        pending = [(ts, read) for ts, read in pending if ts > horizon]
    return dead, Counter(delays)


def test_outputs_and_dead_letters_equal_the_local_engine(readings):
    assert (readings.spark / "totals.jsonl").read_text() == (readings.local / "totals.jsonl").read_text()
    assert (readings.spark / "late.jsonl").read_text() == (readings.local / "late.jsonl").read_text()
    dead, _ = spark_schedule([(e["ts"], e) for e in read_jsonl(readings.events)], LATENCY, PER_BATCH)
    assert read_jsonl(readings.spark / "late.jsonl") == dead
    assert [d["ts"] for d in dead] == [5, 35]
    assert len(read_jsonl(readings.spark / "totals.jsonl")) == len(READINGS) - 2


def test_outputs_are_released_in_the_batch_in_which_they_become_final(readings):
    events = [(e["ts"], e) for e in read_jsonl(readings.events)]
    _, delays = spark_schedule(events, LATENCY, PER_BATCH)
    # Readings held by the punctuation wait exactly one batch; the rest go out in the batch that read them.
    assert delays == Counter({0: 7, 1: 6})
    metrics = readings.metrics
    assert metrics["engine"]["batches"] == math.ceil((len(events) + 1) / PER_BATCH)
    assert metrics["engine"]["release_delay_batches"]["histogram"] == {str(d): n for d, n in sorted(delays.items())}
    assert metrics["engine"]["release_delay_batches"]["max"] == 1
    assert metrics["late_dropped"] == 2 and metrics["released"] == len(events) - 2


def test_metrics_have_the_same_keys_on_both_engines(readings):
    spark, local = readings.metrics, readings.local_metrics
    assert set(spark) == set(local) and set(spark["latency_ms"]) == set(local["latency_ms"])
    for key in ("events", "released", "late_dropped", "late_adjusted"):
        assert spark[key] == local[key], key
    assert spark["engine"]["name"] == "spark" and set(spark["engine"]) == {
        "name", "batches", "batch_duration_ms", "batch_duration_thirds_ms", "first_batch_s", "after_first_batch",
        "batch_time", "timeline", "release_delay_batches", "regime"}
    assert spark["engine"]["after_first_batch"] is None  # only a paced run has a rate to keep up with
    assert spark["engine"]["batch_duration_ms"]["p50"] > 0
    thirds = spark["engine"]["batch_duration_thirds_ms"]
    assert len(thirds) == 3 and min(thirds) > 0
    # The timeline has every batch of the run, in order, and adds up to the run's counts.
    timeline = spark["engine"]["timeline"]
    assert [batch["batch"] for batch in timeline] == list(range(spark["engine"]["batches"]))
    assert timeline[0]["start_s"] == 0 and all(a["start_s"] <= b["start_s"] for a, b in zip(timeline, timeline[1:]))
    assert sum(batch["events"] for batch in timeline) == spark["events"]
    assert sum(batch["released"] for batch in timeline) == spark["released"]
    assert max(batch["held"] for batch in timeline) == spark["peak_buffered"]
    assert all(batch["duration_ms"] > 0 and batch["handler_ms"] for batch in timeline)
    assert local["engine"] == {"name": "local", "punctuations": local["latency_ms"]["batches"]}


def test_a_paced_run_counts_its_rate_after_the_first_micro_batch(spark):
    rate, events = 40, [(ts, ts % 7) for ts in range(60)]
    result = run_spark(graphs.running_sum(), {"numbers": events}, spark, rate=rate)
    assert result.outputs == reference_run(graphs.running_sum(), {"numbers": events})
    engine = result.metrics["engine"]
    after = engine["after_first_batch"]
    # The first micro-batch carries one event; the 59 after it become due one every 1/40 s from the second's start.
    assert after["events"] == len(events) - 1 and engine["first_batch_s"] > 0
    assert after["wall_s"] >= (len(events) - 2) / rate
    assert after["events_per_s"] == after["events"] / after["wall_s"] <= rate * (len(events) - 1) / (len(events) - 2)
    assert result.metrics["wall_s"] > after["wall_s"]


def test_a_paced_run_offers_its_rate_over_all_inputs_together(spark):
    """Two inputs of 120 events at 40 events/s in all: each is offered at 20 a second, as the local engine takes
    sources in turn, so the 119 events of each after the first micro-batch take at least 118 / 20 s (at 40 a
    second each, 3 s and the last batches)."""
    rate, count = 40, 120
    inputs = {"left": [(ts, ts) for ts in range(count)], "right": [(ts, -ts) for ts in range(count)]}
    result = run_spark(graphs.two_sources(), inputs, spark, rate=rate)
    assert result.outputs == reference_run(graphs.two_sources(), inputs)
    after = result.metrics["engine"]["after_first_batch"]
    assert after["events"] == 2 * (count - 1)
    assert after["wall_s"] >= (count - 2) / (rate / 2)


@pytest.mark.parametrize("ingest_partitions, idle_timeout", [(2, None), (3, 60.0)])
def test_every_stage_runs_a_group_only_for_its_shards(spark, tmp_path, ingest_partitions, idle_timeout):
    """Dead letters and counts from the ingest partitions pass through both stages under a shard's key, and so do
    the handler times of an ingest operator (which an idle timeout brings in) with more partitions than shards:
    no stage runs a group of its own for them (each group reports its handler's time under its key)."""
    events = [(ts, ts % 5) for ts in range(40)] + [(2, 9)]  # the last is late
    result = run_spark(graphs.chained_stateful(), {"numbers": events}, spark, checkpoint=tmp_path, max_rows_per_batch=10,
                       ingest_partitions=ingest_partitions, idle_timeout=idle_timeout, reorder_latency=5)
    assert len(result.late) == 1
    parts = [msgpack.unpackb(path.read_bytes()) for path in sorted((tmp_path / "parts").glob("batch-*.msgpack"))]
    groups = {(msgpack.unpackb(payload)["stage"], shard) for part in parts
              for target, shard, payload in part["metrics"] if target == "handler"}
    ingest = {"0: ingest"} if idle_timeout else set()
    assert {stage for stage, _ in groups} == ingest | {"1: count, barrier", "2: gaps, barrier"}
    assert {shard for _, shard in groups} == set(spread_keys(2, 2)), groups


# --- late events and errors ----------------------------------------------------------------

LATE_EVENT = r"event ts=3 of source 'numbers' \(position 2 in its arrival order\)"


def test_late_fail_raises_naming_the_event_like_the_local_engine(spark):
    graph = graphs.running_sum()
    arrival = {"numbers": [(10, 1), (20, 2), (3, 4)]}
    with pytest.raises(fs.LateEventError) as local:
        fs.run(graph, arrival, late="fail")
    with pytest.raises(fs.LateEventError, match=rf"{LATE_EVENT} arrived after punctuation 19"):
        run_spark(graph, arrival, spark, late="fail", max_rows_per_batch=2, ingest_partitions=1)
    assert re.match(rf"{LATE_EVENT} arrived after punctuation 19 \(payload 4\)", str(local.value))
    # In two ingest partitions, events 0 and 2 go to partition 0, which has seen ts 10 only.
    with pytest.raises(fs.LateEventError, match=rf"{LATE_EVENT} arrived after punctuation 9"):
        run_spark(graph, arrival, spark, late="fail", max_rows_per_batch=2, ingest_partitions=2)


def test_late_fail_on_a_file_names_its_line_like_the_local_engine(spark, tmp_path):
    events = tmp_path / "numbers.jsonl"
    events.write_text('{"ts": 10, "value": 1}\n\n{"ts": 20, "value": 2}\n{"ts": 3, "value": 4}\n')
    graph = fs.Graph("sum_of_values")
    graph.source("numbers").map(lambda reading: reading["value"]).stateful(
        key=lambda value: 0, update=running_sum_update).sink("sums")
    with pytest.raises(fs.LateEventError) as local:
        fs.run(graph, {"numbers": events}, late="fail")
    with pytest.raises(fs.LateEventError) as on_spark:
        run_spark(graph, {"numbers": events}, spark, late="fail", max_rows_per_batch=2, ingest_partitions=1)
    assert str(on_spark.value) == str(local.value)
    assert str(local.value).endswith(f"(the event is line 4 of {events})")


def failing_update(state, value):
    if value == 3:
        raise ZeroDivisionError("no threes")
    return (state or 0) + value, [value]


def test_user_function_error_names_operator_and_event(spark):
    graph = fs.Graph("failing")
    graph.source("numbers").stateful(key=lambda v: v % 2, update=failing_update, name="sum").sink("out")
    arrival = {"numbers": [(ts, ts) for ts in range(6)]}
    with pytest.raises(fs.UserFunctionError) as local:
        fs.run(graph, arrival)
    with pytest.raises(fs.UserFunctionError) as on_spark:
        run_spark(graph, arrival, spark)
    assert str(on_spark.value) == str(local.value)
    assert "operator 'sum' raised ZeroDivisionError: no threes (on event ts=3 of source 'numbers'" in str(local.value)


PIPELINE_FAILING_ON_THREES = """
import flamespark as fs


def add(total, reading):
    if reading["value"] == {failing}:
        raise ZeroDivisionError("no threes")
    total = (total or 0) + reading["value"]
    return total, [total]


graph = fs.Graph("sums")
graph.source("readings").stateful(key=lambda r: r["sensor"], update=add, name="sum").sink("sums")
"""


def test_a_run_that_failed_before_its_first_commit_reruns_afresh_once_fixed(spark, tmp_path, capsys):
    """A run that failed in its first micro-batch left nothing to resume: the fixed pipeline, rerun with the same
    command, starts afresh; one that committed a batch stays bound to its pipeline."""
    pipeline, events, out = tmp_path / "sums.py", tmp_path / "events.jsonl", tmp_path / "out"
    events.write_text("".join(json.dumps({"ts": ts, "sensor": "ab"[ts % 2], "value": ts}) + "\n" for ts in range(6)))
    command = ["run", f"{pipeline}:graph", "--input", f"readings={events}", "--out", str(out), "--engine", "spark",
               "--master", "local[2]"]
    pipeline.write_text(PIPELINE_FAILING_ON_THREES.format(failing=3))
    assert main(command) == 1
    assert "operator 'sum' raised ZeroDivisionError: no threes" in capsys.readouterr().err
    pipeline.write_text(PIPELINE_FAILING_ON_THREES.format(failing=-1))
    assert main(command) == 0, capsys.readouterr().err
    assert [json.loads(line) for line in (out / "sums.jsonl").read_text().splitlines()] == [0, 1, 2, 4, 6, 9]
    pipeline.write_text(PIPELINE_FAILING_ON_THREES.format(failing=-2))
    assert main(command) == 1
    assert "belongs to a run with a different pipeline" in capsys.readouterr().err


def test_sharded_operators_fed_by_sharded_ones_join_their_stage():
    graph = graphs.sharded_collectors()
    assert Topology(graph, "optimistic", 2).stage_names([]) == [
        "1: numbered_postings", "2: chunks, collect_chunks, barrier"]
    assert Topology(graph, "buffered", 2).stage_names(["docs"]) == [
        "0: ingest", "1: numbered_postings/buffer, numbered_postings",
        "2: chunks/buffer, chunks, collect_chunks/buffer, collect_chunks, barrier"]


def test_every_stage_whose_operators_make_sink_items_holds_a_part_of_the_barrier():
    graph = graphs.chained_stateful()  # `count` feeds a sink and `gaps`, which runs a stage later
    assert Topology(graph, "optimistic", 2).stage_names([]) == ["1: count, barrier", "2: gaps, barrier"]
    assert Topology(graph, "buffered", 2).stage_names(["numbers"]) == [
        "0: ingest", "1: count/buffer, count, barrier", "2: gaps/buffer, gaps, barrier"]


@pytest.mark.parametrize("mode", ["optimistic", "buffered"])
def test_shard_functions_that_disagree_stop_a_spark_run_naming_both_operators(spark, mode):
    graph = fs.Graph("disagreeing")
    (
        graph.source("numbers")
        .stateful(key=lambda v: v % 4, update=running_sum_update, name="first", shard=lambda key: key % 2)
        .stateful(key=lambda v: v % 4, update=running_sum_update, name="second", shard=lambda key: key % 2 + 1)
        .sink("sums")
    )
    arrival = {"numbers": [(ts, ts) for ts in range(6)]}
    assert fs.run(graph, arrival, mode=mode).outputs == reference_run(graph, arrival)  # the local engine has no shards
    with pytest.raises(fs.UserFunctionError, match="operator 'second' is sharded like 'first', which feeds it"):
        run_spark(graph, arrival, spark, mode=mode)


@pytest.mark.parametrize("mode", ["optimistic", "buffered"])
def test_user_functions_run_with_collections_paused_on_both_engines_and_spark_workers_freeze_their_heap(
        spark, mode):
    graph = fs.Graph("collections")
    (
        graph.source("numbers")
        .map(lambda v: [v, gc.isenabled()], name="ingested")
        .stateful(key=lambda p: p[0] % 2, name="keyed",
                  update=lambda s, p: (s, [[p[1], gc.isenabled(), gc.get_freeze_count() > 0]]))
        .sink("out")
    )
    arrival = {"numbers": [(ts, ts) for ts in range(6)]}
    assert [out[:2] for out in fs.run(graph, arrival, mode=mode).outputs["out"]] == [[False, False]] * 6
    # A keyed stage's worker froze what lived before its first batch (`heap.freeze_what_lives`).
    assert run_spark(graph, arrival, spark, mode=mode).outputs == {"out": [[False, False, True]] * 6}


def test_unencodable_payloads_are_payload_errors(spark):
    graph = fs.Graph("sets")
    graph.source("numbers").map(lambda v: {v}, name="as_set").sink("out")
    arrival = {"numbers": [(1, 1), (2, 2)]}
    with pytest.raises(fs.PayloadError) as local:
        fs.run(graph, arrival)
    with pytest.raises(fs.PayloadError) as on_spark:
        run_spark(graph, arrival, spark, ingest_partitions=1)  # one task meets the events in the local engine's order
    assert str(on_spark.value) == str(local.value)
    assert "operator 'as_set' produced a payload msgpack cannot encode for event ts=1" in str(local.value)
    with pytest.raises(fs.PayloadError, match="cannot encode"):
        run_spark(graphs.running_sum(), {"numbers": [(1, 2**70)]}, spark)


def test_a_sink_name_that_is_no_file_name_is_refused_before_spark_writes_batches_for_it(spark, tmp_path):
    graph = fs.Graph("escape")
    graph.source("numbers").sink("../escaped")
    with pytest.raises(fs.InputError, match=r"sink '\.\./escaped': a sink's name is a file name"):
        run_spark(graph, {"numbers": [(1, 1)]}, spark, output=tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_unknown_source_is_an_input_error(spark):
    with pytest.raises(fs.InputError, match=r"no source named 'digits'; the graph's sources are \['numbers'\]"):
        run_spark(graphs.running_sum(), {"numbers": [], "digits": []}, spark)


def crash(value):
    os._exit(7)


def test_a_crashed_worker_is_summarised_in_one_sentence_with_the_log_path(spark):
    graph = fs.Graph("crashing")
    graph.source("numbers").map(crash, name="crash").sink("out")
    with pytest.raises(fs.FlameSparkError) as failure:
        run_spark(graph, {"numbers": [(1, 1)]}, spark)
    assert type(failure.value) is fs.FlameSparkError
    assert str(failure.value) == (f"the Spark query failed: SparkException: Python worker exited unexpectedly "
                                  f"(crashed) (Spark's log: {LOG_FILE})")


def test_missing_java_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(fs.FlameSparkError, match=r"needs a Java 17\+ runtime.*--engine local"):
        check_java()
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(fs.FlameSparkError, match="needs a Java"):
        check_java()


# --- the CLI on Spark: a crash, a resume, and what the terminal shows ------------------------------

def cli_command(events, out, checkpoint):
    return [sys.executable, "-m", "flamespark", "run", PIPELINE, "--input", f"readings={events}",
            "--out", str(out), "--engine", "spark", "--master", "local[2]", "--reorder-latency", str(LATENCY),
            "--max-rows-per-batch", str(PER_BATCH), "--ingest-partitions", "1", "--checkpoint", str(checkpoint),
            "--changes"]


def run_on_terminal(command):
    """Run `command` with its stderr on a pseudo-terminal; returns (exit code, what the terminal got)."""
    terminal, child_end = pty.openpty()
    process = processes.start(command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=child_end)
    os.close(child_end)
    received = b""
    try:
        while True:
            try:
                chunk = os.read(terminal, 4096)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            received += chunk
        return process.wait(timeout=TIMEOUT), received.decode()
    finally:
        os.close(terminal)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)


def start_cli(command, stderr):
    """`command` in a session of its own (so that a signal can reach its whole process group), stderr to a file."""
    with open(stderr, "wb") as log:
        return processes.start(command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)


def written_parts(checkpoint) -> int:
    """Micro-batches whose releases are written (the last one perhaps not yet committed)."""
    return len(list((checkpoint / "parts").glob("batch-*.msgpack")))


def wait_for_parts(process, checkpoint, count, stderr):
    """Wait until `count` micro-batches have written their parts; the run must still be going."""
    wait_for(lambda: written_parts(checkpoint) >= count, process, stderr, f"micro-batch {count - 1}", TIMEOUT)
    assert process.poll() is None, "the run ended before it could be stopped"


def test_a_cli_run_stopped_by_ctrl_c_then_killed_resumes_to_the_uninterrupted_output(readings, tmp_path, capsys):
    """Three runs of one command on one checkpoint: Ctrl-C after the first micro-batch, SIGKILL after the
    resumed run's next one, then a run to the end, whose outputs are the uninterrupted run's."""
    out, checkpoint, stderr = tmp_path / "out", tmp_path / "checkpoint", tmp_path / "stderr.txt"
    command = cli_command(readings.events, out, checkpoint)

    process = start_cli(command, stderr)
    try:
        wait_for_parts(process, checkpoint, 1, stderr)
        # What Ctrl-C on a terminal does: SIGINT to the whole process group (driver, JVM, Python workers).
        os.killpg(process.pid, signal.SIGINT)
        assert process.wait(timeout=TIMEOUT) == 130, stderr.read_text()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert stderr.read_text().splitlines() == [
        f"flamespark: stopped before the end of the input; rerun the same command to resume (checkpoint {checkpoint})"]
    assert not (out / "metrics.json").exists()

    stopped_at = written_parts(checkpoint)
    process = start_cli(command, stderr)
    try:
        wait_for_parts(process, checkpoint, stopped_at + 1, stderr)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert not (out / "metrics.json").exists()
    assert not (out / "totals.jsonl").exists()
    killed_at = written_parts(checkpoint)

    code, terminal = run_on_terminal(command)
    assert code == 0, terminal
    totals = read_jsonl(out / "totals.jsonl")
    assert (out / "totals.jsonl").read_text() == (readings.spark / "totals.jsonl").read_text()
    assert (out / "totals.jsonl").read_text() == (readings.local / "totals.jsonl").read_text()
    assert len({(t["sensor"], t["ts"]) for t in totals}) == len(totals) == len(READINGS) - 2
    assert (out / "late.jsonl").read_text() == (readings.spark / "late.jsonl").read_text()
    # The changelog too, as if never interrupted: each batch's changes were written once, with the batch.
    assert (out / "totals.changes.jsonl").read_text() == (readings.spark / "totals.changes.jsonl").read_text()
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["released"] == len(totals)
    assert metrics["changes"]["added"] == readings.metrics["changes"]["added"] == len(totals)
    assert metrics["changes"]["retracted"] == readings.metrics["changes"]["retracted"]
    assert without_durations(metrics["engine"]) == without_durations(readings.metrics["engine"])

    # The terminal showed progress and nothing but FlameSpark's lines. It resumed, so it began at the last batch
    # whose part was written (which the kill may have left uncommitted) or after it.
    lines = [line.strip() for line in re.split(r"[\r\n]+", terminal) if line.strip()]
    progress = [line for line in lines if line.startswith("batch ")]
    assert progress and all(re.fullmatch(r"batch \d+: \d+ event\(s\) in, \d+ released, up to \d+ held "
                                         r"at the barrier", line) for line in progress), lines
    assert min(int(line.split()[1].rstrip(":")) for line in progress) >= killed_at - 1
    changes = metrics["changes"]
    assert lines[-1] == (f"released {len(totals)} record(s) from {len(READINGS) - 2} event(s) applied "
                         f"(2 late one(s) dropped, replay ratio 1.000); outputs in {out}; "
                         f"{changes['added']} result(s) added early, {changes['retracted']} retracted "
                         f"(changelogs: {out}/<sink>.changes.jsonl)")
    assert len(progress) == len(lines) - 1, lines

    # Resuming that checkpoint with another reorder latency would mix two runs' state: refused.
    changed = [str(REPO / PIPELINE) if part == PIPELINE else part for part in command[3:]]
    changed[changed.index("--reorder-latency") + 1] = "30"
    capsys.readouterr()
    assert main(changed) == 1
    assert f"checkpoint {checkpoint} belongs to a run with a different reorder_latency" in capsys.readouterr().err


def without_durations(engine_metrics: dict) -> dict:
    """Engine metrics but the micro-batch durations and timings, which only count the batches of the latest run."""
    return {key: value for key, value in engine_metrics.items()
            if key not in ("batch_duration_ms", "batch_duration_thirds_ms", "batch_time", "timeline", "first_batch_s")}


def test_cli_without_java_says_so_in_one_line(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path / "no-java-here"))
    env.pop("JAVA_HOME", None)
    command = cli_command(write_readings(tmp_path / "events.jsonl"), tmp_path / "out", tmp_path / "checkpoint")
    done = processes.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "flamespark: error: the Spark engine needs a Java 17+ runtime and none was found: install one "
        "(e.g. `apt-get install openjdk-17-jre-headless`) or run with --engine local"
    ]
    assert not (tmp_path / "out" / "metrics.json").exists()


def test_run_help_documents_max_rows_per_batch(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "--max-rows-per-batch N" in capsys.readouterr().out
