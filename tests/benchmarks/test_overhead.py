"""The overhead benchmark on a small input: each query emits one count per event; the command's report and errors."""
import json

import pytest

from benchmarks.lib.overhead import workload
from benchmarks.lib.overhead.settings import Settings
from benchmarks.overhead import main
import flamespark as fs

EVENTS = 200


def test_reorder_latency_admits_every_event():
    events = workload.make_events(EVENTS, 10, 10, 30.0, 1000.0, seed=3)
    assert sorted(e["ts"] for e in events) == [10 * i for i in range(EVENTS)]
    lag = workload.max_lag(events)
    newest = float("-inf")
    for event in events:
        assert event["ts"] >= newest - lag
        newest = max(newest, event["ts"])
    assert workload.max_lag([{"ts": 5}, {"ts": 1}, {"ts": 9}, {"ts": 2}]) == 7


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
    # 150 events and the end marker in micro-batches of 80 rows, each query's split by micro-batch and operator.
    assert run["flamespark"]["time"]["micro_batches"] == run["baseline"]["time"]["micro_batches"] == 2
    assert len(run["flamespark"]["time"]["batches"][0]["operators"]) == len(workload.FLAMESPARK_OPERATORS)
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
