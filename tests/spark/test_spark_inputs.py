"""Directories of JSONL or Parquet files through Spark's file source, sink directories, --follow, checkpoint claims."""
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flamespark as fs
from examples.running_sum import graph as running_sum
from flamespark.engines.spark import query
from flamespark.io.inputs import read_input
from tests import processes
from tests.processes import wait_for
from tests.oracles.reference import reference_run

REPO = Path(__file__).resolve().parents[2]
PIPELINE = "examples/running_sum.py:graph"
LATENCY = 40
TIMEOUT = 600


def arrival_order(count: int, seed: int) -> list:
    """Sensor readings, one per 5 ms, none arriving more than LATENCY ms behind the newest."""
    rnd = random.Random(seed)
    events = [{"ts": 5 * i, "sensor": f"s{rnd.randrange(4)}", "value": rnd.randrange(10)} for i in range(count)]
    return sorted(events, key=lambda e: e["ts"] + rnd.randint(0, LATENCY))


def write_file(path: Path, events: list):
    """Write an event file atomically, so the file source never sees half of it."""
    temporary = path.with_name(f".{path.name}.tmp")
    if path.suffix == ".parquet":
        pq.write_table(pa.Table.from_pylist(events), temporary)
    else:
        temporary.write_text("".join(json.dumps(e) + "\n" for e in events))
    os.replace(temporary, path)


def split_into(directory: Path, events: list, parts: int, suffix: str):
    directory.mkdir(parents=True)
    size = -(-len(events) // parts)
    for index in range(parts):
        write_file(directory / f"part-{index}{suffix}", events[index * size:(index + 1) * size])


def in_order_run(events: list) -> dict:
    """The running sum's outputs by the in-order interpreter, over `events` in any order."""
    return reference_run(running_sum, {"readings": [(e["ts"], e) for e in events]})


def read_directory(directory: Path) -> list:
    values = []
    for path in sorted(directory.iterdir()):
        if path.suffix == ".parquet":
            values.extend(pq.read_table(path).to_pylist())
        else:
            values.extend(json.loads(line) for line in path.read_text().splitlines())
    return values


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_directory_gives_the_in_order_output_and_a_resume_refuses_other_settings(spark, tmp_path, suffix,
                                                                                    monkeypatch):
    arrival = arrival_order(120, seed=len(suffix))
    split_into(tmp_path / "in", arrival, 3, suffix)
    expected = in_order_run(arrival)
    assert fs.run(running_sum, {"readings": read_input("readings", tmp_path / "in")},
                  reorder_latency=LATENCY).outputs == expected
    fmt = suffix[1:]
    options = dict(engine="spark", spark=spark, shards=2, timeout=TIMEOUT, checkpoint=tmp_path / "ck",
                   output=tmp_path / "out", output_format=fmt)

    result = fs.run(running_sum, {"readings": tmp_path / "in"}, reorder_latency=LATENCY, **options)
    assert result.outputs == expected and result.late == [] and result.metrics["events"] == 120
    assert read_directory(tmp_path / "out" / "totals") == expected["totals"]
    assert all(p.suffix == suffix for p in (tmp_path / "out" / "totals").iterdir())

    with monkeypatch.context() as patch:  # refused before a Spark session is asked for
        patch.setattr(query, "spark_session", lambda *_: pytest.fail("the refused run started Spark"))
        with pytest.raises(fs.InputError, match=rf"a different reorder_latency \({LATENCY} then, {LATENCY + 1} now\)"):
            fs.run(running_sum, {"readings": tmp_path / "in"}, reorder_latency=LATENCY + 1,
                   **{**options, "spark": None})
    claim = tmp_path / "ck" / "engine.json"
    written = claim.read_text()
    older = {key: value for key, value in json.loads(written).items() if key != "state_layout"}
    claim.write_text(json.dumps(older))  # as a checkpoint from before the keyed state's layout was recorded
    with pytest.raises(fs.InputError, match=r"belongs to a run with a different state_layout"):
        fs.run(running_sum, {"readings": tmp_path / "in"}, reorder_latency=LATENCY, **options)
    claim.write_text(written)
    resumed = fs.run(running_sum, {"readings": tmp_path / "in"}, reorder_latency=LATENCY, **options)
    assert resumed.outputs == expected
    assert resumed.metrics["engine"]["batches"] == result.metrics["engine"]["batches"]


def test_a_rate_for_a_directory_and_follow_without_one_are_refused_before_the_query_starts(spark, tmp_path):
    directory = tmp_path / "readings"
    split_into(directory, arrival_order(10, seed=0), 2, ".jsonl")
    with pytest.raises(fs.OptionError, match=r"rate paces inputs that are replayed .*'readings' is a directory"):
        fs.run(running_sum, {"readings": directory}, engine="spark", spark=spark, rate=100, checkpoint=tmp_path / "ck")
    events = [(event["ts"], event) for event in arrival_order(10, seed=0)]
    with pytest.raises(fs.OptionError, match=r"follow watches input directories .* no input \('readings'\) is a "):
        fs.run(running_sum, {"readings": events}, engine="spark", spark=spark, follow=True, checkpoint=tmp_path / "ck")
    assert not (tmp_path / "ck").exists()


def test_bad_directory_inputs_name_file_and_line(spark, tmp_path):
    def run(directory):
        return fs.run(running_sum, {"readings": directory}, engine="spark", spark=spark, timeout=TIMEOUT)

    mixed = tmp_path / "mixed"
    mixed.mkdir()
    write_file(mixed / "a.jsonl", [{"ts": 1, "sensor": "a", "value": 1}])
    write_file(mixed / "b.parquet", [{"ts": 2, "sensor": "a", "value": 1}])
    with pytest.raises(fs.InputError, match=r"mixes \.jsonl and \.parquet files"):
        run(mixed)

    no_ts = tmp_path / "no_ts"
    no_ts.mkdir()
    write_file(no_ts / "a.parquet", [{"time": 2, "sensor": "a", "value": 1}])
    with pytest.raises(fs.InputError, match=r"a\.parquet: Parquet events need an integer column 'ts' \(ms\); "
                                            r"found no column 'ts'"):
        run(no_ts)

    broken = tmp_path / "broken"
    broken.mkdir()
    write_file(broken / "a.jsonl", [{"ts": 1, "sensor": "a", "value": 1}])
    (broken / "b.jsonl").write_text('{"ts": 2, "sensor": "a", "value": 1}\n\n{"ts": 3, "sensor": \n')
    with pytest.raises(fs.InputError, match=rf"{broken / 'b.jsonl'}:3: malformed JSON"):
        run(broken)

    null_ts = tmp_path / "null_ts"
    null_ts.mkdir()
    write_file(null_ts / "a.parquet", [{"ts": 1, "sensor": "a", "value": 1}, {"ts": None, "sensor": "a", "value": 1}])
    with pytest.raises(fs.InputError, match=rf"{null_ts / 'a.parquet'}, row 1: 'ts' must be an integer \(ms\), "
                                            r"got null"):
        run(null_ts)


def test_bad_input_is_refused_before_spark_starts(tmp_path):
    """A bad event fails the run before a JVM starts: in a file, at the end, and in an iterable (which the
    engine checks as it writes its replay file). A process of its own, as the suite's session is shared."""
    bad_file = tmp_path / "bad.jsonl"
    bad_file.write_text('{"ts": 1, "sensor": "a", "value": 1}\n{"ts": 2.5, "sensor": "a", "value": 1}\n')
    script = f"""
import flamespark as fs, pyspark
from examples.running_sum import graph
for given in ({str(bad_file)!r}, [(1, {{"sensor": "a", "value": 1}}), ("2", {{"sensor": "a", "value": 1}})]):
    try:
        fs.run(graph, {{"readings": given}}, engine="spark", checkpoint={str(tmp_path / "ck")!r})
    except fs.InputError as error:
        print(error)
print("Spark started:", pyspark.SparkContext._active_spark_context is not None)
"""
    done = processes.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines() == [
        f"{bad_file}:2: 'ts' must be an integer (ms), got 2.5",
        "input 'readings', event #1: event time must be an integer (ms), got str '2'",
        "Spark started: False",
    ], done.stderr


def test_follow_writes_each_batch_stops_on_ctrl_c_and_resumes(tmp_path):
    arrival = arrival_order(90, seed=7)
    late = {"ts": 0, "sensor": "late", "value": 5}
    inputs, out, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "ck"
    inputs.mkdir()
    write_file(inputs / "part-0.jsonl", arrival[:30])
    command = [sys.executable, "-m", "flamespark", "run", str(REPO / PIPELINE), "--input", f"readings={inputs}",
               "--out", str(out), "--checkpoint", str(checkpoint), "--reorder-latency", str(LATENCY),
               "--master", "local[2]"]
    stderr = tmp_path / "stderr.txt"
    with open(stderr, "wb") as log:
        process = processes.start(command + ["--follow"], cwd=REPO, stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=log)
        try:
            wait_for(lambda: (out / "totals").is_dir() and any((out / "totals").iterdir()), process, stderr,
                     "the first file's outputs", TIMEOUT)
            write_file(inputs / "part-1.jsonl", [late] + arrival[30:60])
            wait_for(lambda: (out / "late").is_dir() and any((out / "late").iterdir()), process, stderr,
                     "the second file's dead letter", TIMEOUT)
            # Ctrl-C on a terminal signals the whole process group: the driver, the JVM and Spark's Python workers.
            os.killpg(process.pid, signal.SIGINT)
            assert process.wait(timeout=TIMEOUT) == 0, stderr.read_text()
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
    lines = stderr.read_text().splitlines()
    assert len(lines) == 1 and re.fullmatch(
        rf"flamespark: stopped; released {len(read_directory(out / 'totals'))} record\(s\) from 60 event\(s\) "
        rf"applied \(1 late one\(s\) dropped, replay ratio [0-9.]+\); outputs in {re.escape(str(out))}; "
        rf"rerun the same command to go on \(checkpoint {re.escape(str(checkpoint))}\)", lines[0]), lines

    # What a follow run released is exactly the in-order output up to its punctuation, written batch by batch.
    read = arrival[:60]
    final_up_to = max(e["ts"] for e in read) - LATENCY - 1
    released = read_directory(out / "totals")
    assert released == [o for o in in_order_run(read)["totals"] if o["ts"] <= final_up_to]
    assert released == [o for o in in_order_run(arrival)["totals"] if o["ts"] <= final_up_to]
    assert [dead["payload"] for dead in read_directory(out / "late")] == [late]
    assert json.loads((out / "metrics.json").read_text())["events"] == 60

    # The same checkpoint, run to the end of what the directory holds now, completes the output.
    write_file(inputs / "part-2.jsonl", arrival[60:])
    finished = processes.run(command, cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=TIMEOUT)
    assert finished.returncode == 0, finished.stderr
    totals = [json.loads(line) for line in (out / "totals.jsonl").read_text().splitlines()]
    assert totals == in_order_run(arrival)["totals"]
    assert [json.loads(line)["payload"] for line in (out / "late.jsonl").read_text().splitlines()] == [late]


def _two_sensor_sources():
    from examples.running_sum import add_reading

    graph = fs.Graph("two_sensor_sources")
    a, b = graph.source("a"), graph.source("b")
    a.union(b, name="both").stateful(key=lambda r: r["sensor"], update=add_reading, name="totals").sink("totals")
    return graph


def readings(sensor: str, times) -> list:
    return [{"ts": ts, "sensor": sensor, "value": ts % 7} for ts in times]


def test_an_idle_source_stops_holding_back_the_other_after_the_idle_timeout(spark, tmp_path):
    graph, idle = _two_sensor_sources(), 2.0
    a, b, out = tmp_path / "a", tmp_path / "b", tmp_path / "out"
    a.mkdir(), b.mkdir()
    write_file(a / "part-0.jsonl", readings("a", range(0, 201, 10)))
    write_file(b / "part-0.jsonl", readings("b", range(0, 51, 5)))
    outcome = {}

    def follow():
        outcome["result"] = fs.run(graph, {"a": a, "b": b}, engine="spark", spark=spark, reorder_latency=LATENCY,
                                   follow=True, idle_timeout=idle, output=out, checkpoint=tmp_path / "ck")

    def released():
        return read_directory(out / "totals") if (out / "totals").is_dir() else []

    def until(condition, what):
        deadline = time.monotonic() + TIMEOUT
        while not condition():
            assert runner.is_alive(), f"the run ended before {what}"
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.2)

    def in_order(events, up_to):
        totals = reference_run(graph, {"a": [(e["ts"], e) for e in events if e["sensor"] == "a"],
                                       "b": [(e["ts"], e) for e in events if e["sensor"] == "b"]})["totals"]
        return [total for total in totals if total["ts"] <= up_to]

    runner = threading.Thread(target=follow)
    runner.start()
    try:
        # b's newest reading (50) holds a's back: released up to 50 - LATENCY - 1 only.
        until(lambda: released(), "the first batch")
        first = readings("a", range(0, 201, 10)) + readings("b", range(0, 51, 5))
        assert released() == in_order(first, 50 - LATENCY - 1)
        # Past the idle timeout, a's next file releases up to a's own punctuation.
        time.sleep(idle + 0.5)
        write_file(a / "part-1.jsonl", readings("a", range(210, 301, 10)))
        second = first + readings("a", range(210, 301, 10))
        until(lambda: len(released()) == len(in_order(second, 300 - LATENCY - 1)), "the idle source to be passed")
        # b comes back: a reading behind the punctuation it was given is late, a newer one is on time.
        write_file(b / "part-1.jsonl", readings("b", [100, 280]))
        until(lambda: (out / "late").is_dir() and any((out / "late").iterdir()), "b's late reading")
    finally:
        for active in spark.streams.active:
            active.stop()
        runner.join()
    result = outcome["result"]
    assert [dead["payload"] for dead in result.late] == readings("b", [100])
    assert released() == result.outputs["totals"] == in_order(second + readings("b", [280]), 300 - LATENCY - 1)
