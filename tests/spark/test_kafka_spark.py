"""Kafka topics in and out of the Spark engine, against a real broker: the in-order run's outputs, per
partition ingest, and exactly once after the driver is killed twice mid-run.

Every Spark query costs seconds, each CLI run far more (a JVM of its own):
the module runs one in-process query per mode and one killed CLI run.
"""
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import flamespark as fs
from examples.running_sum import graph as running_sum, readings
from tests.oracles.changelog_checks import replay
from tests.kafka_topics import committed_records, produce, values
from tests import processes
from tests.processes import wait_for
from tests.oracles.reference import reference_run

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[2]
LATENCY = 6
PARTITIONS = 3
TIMEOUT = 600


def partitioned_readings(count: int, behind: int, seed: int) -> list[list]:
    """`count` readings spread over PARTITIONS partitions by sensor, each partition's in an arrival order where
    none is `behind` ms or more behind the newest."""
    rng = random.Random(seed)
    parts = [[] for _ in range(PARTITIONS)]
    for reading in readings(count, sensors=6, seed=seed):
        parts[int(reading["sensor"][1:]) % PARTITIONS].append(reading)
    return [sorted(part, key=lambda reading: reading["ts"] + rng.randrange(behind)) for part in parts]


@pytest.mark.parametrize("mode", ["optimistic", "buffered"])
def test_a_topic_on_spark_releases_the_in_order_run_over_what_it_admits(kafka_broker, spark, mode):
    # Disorder beyond the reorder latency, read a few records a batch: some records are late.
    parts = partitioned_readings(60, 3 * LATENCY, seed=7)
    topic = kafka_broker.new_topic(f"spark-{mode}", PARTITIONS)
    produce(kafka_broker, topic, parts)
    result = fs.run(running_sum, {"readings": kafka_broker.url(topic)}, engine="spark", spark=spark, shards=2,
                    mode=mode, reorder_latency=LATENCY, max_rows_per_batch=6, timeout=TIMEOUT)
    admitted = [reading for part in parts for reading in part]
    for dead in result.late:
        admitted.remove(dead["payload"])
    assert result.late and result.metrics["engine"]["batches"] > 3
    assert result.outputs == reference_run(running_sum, {"readings": [(r["ts"], r) for r in admitted]})
    if mode == "optimistic":
        # Each partition is ingested on its own: a record is late only behind its own partition's records.
        for dead in result.late:
            part = next(part for part in parts if dead["payload"] in part)
            before = part[:part.index(dead["payload"])]
            assert any(reading["ts"] - LATENCY > dead["ts"] for reading in before), dead


def test_a_bad_record_fails_the_spark_run_naming_topic_partition_and_offset(kafka_broker, spark):
    topic = kafka_broker.new_topic("spark-bad", 2)
    produce(kafka_broker, topic, [[{"ts": 1, "sensor": "s0", "value": 1}], [{"ts": 1, "sensor": "s1", "value": 1},
                                                                           b"[1, 2]"]])
    with pytest.raises(fs.InputError, match=rf"^input 'readings': Kafka topic '{topic}', partition 1, offset 1: "
                                            rf"expected a JSON object with an integer 'ts', got list$"):
        fs.run(running_sum, {"readings": kafka_broker.url(topic)}, engine="spark", spark=spark, shards=2,
               timeout=TIMEOUT)


def test_a_run_whose_broker_stops_mid_run_fails_and_once_rerun_sends_every_output_exactly_once(
        kafka_broker, spark, tmp_path):
    parts = partitioned_readings(36, LATENCY, seed=5)
    source = kafka_broker.new_topic("restarted", PARTITIONS)
    produce(kafka_broker, source, parts)
    sink = f"totals-{source}"

    def run():
        return fs.run(running_sum, {"readings": kafka_broker.url(source)}, engine="spark", spark=spark, shards=2,
                      reorder_latency=LATENCY, max_rows_per_batch=PARTITIONS, checkpoint=tmp_path, timeout=TIMEOUT,
                      sinks={"totals": kafka_broker.url(sink)})

    def stop_after_two_batches():
        deadline = time.monotonic() + TIMEOUT
        while written_parts(tmp_path) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        kafka_broker.stop()

    stopper = threading.Thread(target=stop_after_two_batches)
    stopper.start()
    try:
        with pytest.raises(fs.FlameSparkError, match=kafka_broker.address):
            run()
    finally:
        stopper.join()
        kafka_broker.start()
    run()
    events = [(reading["ts"], reading) for part in parts for reading in part]
    assert values(committed_records(kafka_broker, sink)) == reference_run(running_sum, {"readings": events})["totals"]


# --- a quiet partition and the idle timeout ---------------------------------------------------------


def sensor_readings(sensor: str, times) -> list:
    return [{"ts": ts, "sensor": sensor, "value": ts % 7} for ts in times]


def released_files(directory: Path) -> list:
    """The outputs a run wrote batch by batch to `directory`, in batch order."""
    if not directory.is_dir():
        return []
    return [json.loads(line) for path in sorted(directory.iterdir()) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("idle_timeout", [None, 2.0])
def test_a_quiet_partition_holds_its_topic_back_until_the_idle_timeout_passes_it(kafka_broker, spark, tmp_path,
                                                                               idle_timeout):
    topic = kafka_broker.new_topic("quiet", 2)
    active, quiet = sensor_readings("s0", range(0, 201, 10)), sensor_readings("s1", range(0, 51, 5))
    produce(kafka_broker, topic, [active, quiet])
    out, checkpoint, outcome = tmp_path / "out", tmp_path / "ck", {}

    def follow():
        outcome["result"] = fs.run(running_sum, {"readings": kafka_broker.url(topic)}, engine="spark", spark=spark,
                                   shards=2, reorder_latency=LATENCY, follow=True, idle_timeout=idle_timeout,
                                   output=out, checkpoint=checkpoint, timeout=TIMEOUT)

    def until_read(count: int):
        """Until the batches that read the topic's first `count` records are done (their releases written)."""
        deadline = time.monotonic() + TIMEOUT
        while sum(entry["numInputRows"] for query in spark.streams.active for entry in query.recentProgress) < count:
            assert runner.is_alive(), f"the run ended before it read {count} records"
            assert time.monotonic() < deadline, f"timed out waiting for the run to read {count} records"
            time.sleep(0.1)

    def in_order(events, up_to):
        totals = reference_run(running_sum, {"readings": [(e["ts"], e) for e in events]})["totals"]
        return [total for total in totals if total["ts"] <= up_to]

    runner = threading.Thread(target=follow)
    runner.start()
    try:
        # The quiet partition's newest reading (50) holds the active one's back.
        read = active + quiet
        until_read(len(read))
        assert released_files(out / "totals") == in_order(read, 50 - LATENCY - 1)
        # Past the idle timeout, the active partition alone goes on.
        time.sleep(2.5)
        more = sensor_readings("s0", range(210, 301, 10))
        produce(kafka_broker, topic, [more, []])
        read += more
        until_read(len(read))
        if idle_timeout is None:
            assert released_files(out / "totals") == in_order(read, 50 - LATENCY - 1)
        else:
            assert released_files(out / "totals") == in_order(read, 300 - LATENCY - 1)
            # The quiet partition comes back: a reading behind the punctuation it was given is late.
            back = sensor_readings("s1", [100, 298])
            produce(kafka_broker, topic, [[], back])
            until_read(len(read) + len(back))
            read += back[1:]
    finally:
        for running in spark.streams.active:
            running.stop()
        runner.join()
    result = outcome["result"]
    late = [] if idle_timeout is None else sensor_readings("s1", [100])
    assert [dead["payload"] for dead in result.late] == late
    up_to = 50 - LATENCY - 1 if idle_timeout is None else 300 - LATENCY - 1
    assert released_files(out / "totals") == result.outputs["totals"] == in_order(read, up_to)


# --- the driver killed twice during one Kafka-to-Kafka run ------------------------------------------


def cli_command(source_url, sink_url, out, checkpoint):
    return [sys.executable, "-m", "flamespark", "run", "examples/running_sum.py:graph",
            "--input", f"readings={source_url}", "--sink", f"totals={sink_url}", "--out", str(out),
            "--engine", "spark", "--master", "local[2]", "--reorder-latency", str(LATENCY),
            "--max-rows-per-batch", str(2 * PARTITIONS), "--checkpoint", str(checkpoint), "--changes"]


def start_cli(command, stderr: Path):
    """`command` in a process group of its own, so that a kill reaches the driver and its JVM alike."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    with open(stderr, "ab") as log:
        return processes.start(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=log)


def written_parts(checkpoint: Path) -> int:
    return len(list((checkpoint / "parts").glob("batch-*.msgpack")))


def test_a_kafka_to_kafka_run_killed_twice_sends_every_output_exactly_once(kafka_broker, tmp_path):
    # None late: then what the run releases is the in-order run's, however its batches fell.
    parts = partitioned_readings(36, LATENCY, seed=3)
    source = kafka_broker.new_topic("readings", PARTITIONS)
    produce(kafka_broker, source, parts)
    sink = f"totals-{source}"
    out, checkpoint, stderr = tmp_path / "out", tmp_path / "checkpoint", tmp_path / "stderr.txt"
    command = cli_command(kafka_broker.url(source), kafka_broker.url(sink), out, checkpoint)
    for _ in range(2):  # a restart killed again: what one kill leaves, the next run must not redo
        process = start_cli(command, stderr)
        try:
            # Killed once it has written one batch more: mid-run, wherever in the next batch it is.
            target = written_parts(checkpoint) + 1
            wait_for(lambda: written_parts(checkpoint) >= target, process, stderr, f"batch {target}", TIMEOUT, 0.05)
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    process = start_cli(command, stderr)
    assert process.wait(timeout=TIMEOUT) == 0, stderr.read_text()

    events = [(reading["ts"], reading) for part in parts for reading in part]
    expected = reference_run(running_sum, {"readings": events})["totals"]
    records = committed_records(kafka_broker, sink)
    assert values(records) == expected
    assert [headers["ts"] for *_, headers in records] == [str(total["ts"]).encode() for total in expected]
    # The changelog, batch by batch, once: it replays to the outputs, with nothing added twice.
    changes = values(committed_records(kafka_broker, f"{sink}.changes"))
    left = replay(changes)
    assert sorted(ts for ts, _ in left.elements()) == sorted(total["ts"] for total in expected)
    assert json.loads((out / "metrics.json").read_text())["released"] == len(expected)
    assert not (out / "totals.jsonl").exists()
