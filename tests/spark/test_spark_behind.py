"""The optimistic mode on Spark behind its input: batches apply only what their punctuation made final, hold the
rest back in the state store, and the outputs stay exact, across a kill and a restart too.

A paced run whose batches are capped (`max_rows_per_batch`) at fewer events
than are due is behind its input in every batch but the last: a fast rate
makes every event due at once, so the regime does not depend on timing.
"""
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import msgpack
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import flamespark as fs
from flamespark.tools.runner import run_to_directory
from examples import running_sum
from tests import processes
from tests.processes import wait_for
from tests.oracles.reference import reference_run
from tests.spark.test_spark import all_graphs, disorder, in_order_inputs

REPO = Path(__file__).resolve().parents[2]
PIPELINE = "examples/running_sum.py:graph"
TIMEOUT = 900
# Far more events a second than a batch takes: every batch but the first (one event) and the last is behind.
RATE, PER_BATCH = 5000, 5


@pytest.mark.spark
@pytest.mark.parametrize("mode", ["optimistic", "buffered"])
@settings(max_examples=2, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(rnd=st.randoms(use_true_random=False))
def test_batches_behind_their_input_release_the_in_order_outputs(spark, mode, rnd):
    graph, latency = all_graphs(), 6
    events = in_order_inputs(rnd)
    arrival = {source: disorder(pairs, latency, rnd) for source, pairs in events.items()}
    assume(arrival != events)
    result = fs.run(graph, arrival, engine="spark", spark=spark, shards=2, timeout=TIMEOUT, mode=mode,
                    reorder_latency=latency, rate=RATE, max_rows_per_batch=PER_BATCH, ingest_partitions=2,
                    changes=True)
    assert result.outputs == reference_run(graph, events)
    assert result.late == []
    assert result.metrics["released"] == sum(len(values) for values in result.outputs.values())
    regime = result.metrics["engine"]["regime"]
    if mode == "optimistic":
        assert regime["batches_behind"] >= 3
        assert regime["held_back"] > 0
    else:  # the baseline buffers everything anyway: it never holds back
        assert regime == {"batches_behind": 0, "held_back": 0, "peak_held_back": 0}


@pytest.mark.spark
def test_a_batch_behind_its_input_replays_nothing_it_held_back(spark):
    """In order but for one event, which arrives a batch behind five later ones of its key: applied on arrival,
    it retracts their totals; behind, the batches hold the later ones back until the punctuation passes them,
    and replay nothing."""
    events = [(ts, {"ts": ts, "sensor": "a", "value": ts}) for ts in range(0, 400, 10)]
    arrival = events[:10] + events[11:16] + [events[10]] + events[16:]
    graph = fs.Graph("sums")
    graph.source("readings").stateful(key=lambda r: r["sensor"], update=_add, name="sums").sink("totals")
    options = dict(engine="spark", spark=spark, shards=2, timeout=TIMEOUT, reorder_latency=60,
                   max_rows_per_batch=PER_BATCH, ingest_partitions=1)
    behind = fs.run(graph, {"readings": arrival}, rate=RATE, **options)
    on_arrival = fs.run(graph, {"readings": arrival}, **options)
    assert behind.outputs == on_arrival.outputs == reference_run(graph, {"readings": events})
    assert on_arrival.metrics["tombstones"] > 0
    assert behind.metrics["tombstones"] == 0
    assert behind.metrics["engine"]["regime"]["batches_behind"] >= 3
    assert on_arrival.metrics["engine"]["regime"]["batches_behind"] == 0


def _add(total, reading):
    total = (total or 0) + reading["value"]
    return total, [{"ts": reading["ts"], "total": total}]


def write_readings(path, count=60, seed=3):
    """`count` readings of three sensors, 10 ms apart, some delayed by up to 15 ms, within the reorder latency (20 ms)."""
    rng = random.Random(seed)
    events = [{"ts": ts, "sensor": f"s{ts % 3}", "value": ts % 7} for ts in range(0, count * 10, 10)]
    order = sorted(range(count), key=lambda i: events[i]["ts"] + rng.choice((0, 0, 12, 15)))
    path.write_text("".join(json.dumps(events[i]) + "\n" for i in order))
    return path


def cli_command(events, out, checkpoint):
    return [sys.executable, "-m", "flamespark", "run", PIPELINE, "--input", f"readings={events}",
            "--out", str(out), "--engine", "spark", "--master", "local[2]", "--reorder-latency", "20",
            "--rate", str(RATE), "--max-rows-per-batch", "3", "--ingest-partitions", "1",
            "--checkpoint", str(checkpoint), "--changes"]


def held_back_in_parts(checkpoint) -> int:
    """What the stages held back at the end of the latest micro-batch whose releases are written."""
    parts = sorted((checkpoint / "parts").glob("batch-*.msgpack"))
    if not parts:
        return 0
    metrics = msgpack.unpackb(parts[-1].read_bytes())["metrics"]
    return sum(msgpack.unpackb(payload)["waiting"] for kind, _, payload in metrics if kind == "held_back")


@pytest.mark.spark
def test_a_run_killed_while_it_holds_events_back_resumes_to_the_uninterrupted_output(spark, tmp_path):
    events = write_readings(tmp_path / "events.jsonl")
    uninterrupted = tmp_path / "uninterrupted"
    run_to_directory(str(REPO / PIPELINE), {"readings": events}, uninterrupted, engine="spark",
                     reorder_latency=20, rate=RATE, max_rows_per_batch=3, ingest_partitions=1, changes=True)
    out, checkpoint, stderr = tmp_path / "out", tmp_path / "checkpoint", tmp_path / "stderr.txt"
    command = cli_command(events, out, checkpoint)
    with open(stderr, "wb") as log:
        process = processes.start(command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_for(lambda: held_back_in_parts(checkpoint) > 0 and len(list((checkpoint / "parts").glob("*"))) > 3,
                 process, stderr, "a micro-batch that holds events back", TIMEOUT, poll=0.02)
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # kill -9 of the run, its JVM and its Python workers
        processes.stop(process)
    assert not (out / "metrics.json").exists()

    done = processes.run(command, cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr.decode()
    assert (out / "totals.jsonl").read_text() == (uninterrupted / "totals.jsonl").read_text()
    in_order = sorted((reading["ts"], reading) for reading in map(json.loads, events.read_text().splitlines()))
    expected = reference_run(running_sum.graph, {"readings": in_order})
    assert [json.loads(line) for line in (out / "totals.jsonl").read_text().splitlines()] == expected["totals"]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["engine"]["regime"]["batches_behind"] > 0
