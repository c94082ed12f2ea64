"""The overhead benchmark on a small input: each query emits one count per event; the command's report and errors."""
import json

import pytest

from benchmarks.lib.overhead import baseline, query_reports, workload
from benchmarks.lib.overhead.settings import Settings
from benchmarks.overhead import main
import flamespark as fs
from flamespark.io.jsonl import write_jsonl

EVENTS = 200
BATCH_ROWS = 120  # 200 events and the end marker: two micro-batches


def test_reorder_latency_admits_every_event():
    events = workload.make_events(EVENTS, 10, 10, 30.0, 1000.0, seed=3)
    assert sorted(e["ts"] for e in events) == [10 * i for i in range(EVENTS)]
    lag = workload.max_lag(events)
    newest = float("-inf")
    for event in events:
        assert event["ts"] >= newest - lag
        newest = max(newest, event["ts"])
    assert workload.max_lag([{"ts": 5}, {"ts": 1}, {"ts": 9}, {"ts": 2}]) == 7


def test_flamespark_and_baseline_emit_one_count_per_event(spark, tmp_path):
    events = workload.make_events(EVENTS, 10, 10, 10.0, 1000.0, seed=1)
    events_path, replay_path = tmp_path / "events.jsonl", tmp_path / "events.replay"
    write_jsonl(events_path, events)
    assert baseline.write_baseline_input(replay_path, events) == EVENTS
    listener = query_reports.QueryReportListener()
    spark.streams.addListener(listener)
    try:
        a = workload.run_flamespark(spark, events_path, EVENTS, BATCH_ROWS, workload.max_lag(events), 2, listener)
        b = baseline.run_baseline(spark, replay_path, EVENTS, BATCH_ROWS, "key", 2, listener)
    finally:
        spark.streams.removeListener(listener)
    assert a["outputs"] == EVENTS and a["late"] == 0
    assert b["outputs"] == EVENTS
    assert a["batches"] == b["batches"] == len(a["reports"]) == len(b["reports"]) == 2
    split = query_reports.summarize(a, workload.FLAMESPARK_OPERATORS)["time"]
    assert split["micro_batches"] == 2 and len(split["batches"][0]["operators"]) == 1


def test_cli_writes_a_report_with_the_ratio_and_passing_checks(spark, tmp_path, capsys):
    out = tmp_path / "overhead.json"
    status = main(["--events", "150", "--keys", "5", "--batch-rows", "80", "--repeat", "1",
                   "--warmup-events", "20", "--out", str(out)])
    report = json.loads(out.read_text())
    assert status == 0 and all(report["checks"].values())
    run = report["runs"][0]
    assert report["ratio"] == run["flamespark"]["wall_s"] / run["baseline"]["wall_s"]
    assert report["goal_met"] == (report["ratio"] <= report["goal"])
    assert [entry["query"] for entry in report["warmup"]] == ["flamespark", "baseline-key"]
    table = capsys.readouterr().out
    assert "ratio A/B of wall time (median)" in table and "checks: all passed" in table


@pytest.mark.parametrize("argv, message", [
    (["--events", "0"], "--events: must be > 0, not 0"),
    (["--percent", "120"], "--percent: must be between 0 and 100"),
    (["--conf", "spark.sql.shuffle.partitions"], "--conf: expected KEY=VALUE, got 'spark.sql.shuffle.partitions'"),
])
def test_bad_options_are_named(argv, message, capsys):
    with pytest.raises(SystemExit) as raised:
        main(argv)
    assert raised.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("settings, message", [
    (dict(events=0), "events must be an integer >= 1, got 0"),
    (dict(repeat=1.5), "repeat must be an integer >= 1, got 1.5"),
    (dict(baseline="row"), "baseline must be one of key, shard, got 'row'"),
])
def test_bad_settings_are_named(settings, message):
    with pytest.raises(fs.OptionError, match=message):
        Settings(**settings)
