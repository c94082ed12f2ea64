"""The window benchmarks (benchmarks/windows_local.py, benchmarks/windows_vs_spark.py) run end to end at a tiny
size and report what the issue asks for; their counting helpers against hand-worked cases."""
import json

import pytest

from benchmarks import levels, windows_local, windows_vs_spark
from tests.benchmarks.typed import run_benchmark
from tests.doctests import assert_runs, examples_of


def test_the_examples_in_their_docstrings():
    tests = [test for module in (windows_local, windows_vs_spark, levels) for test in examples_of(module)]
    assert len(tests) >= 5
    for test in tests:
        assert_runs(test)


def test_the_streamed_input_is_the_input_disordered_a_chunk_at_a_time():
    streamed = list(windows_local.streamed_arrival(2500, keys=7, seed=3, percent_late=30, stddev_ms=64, chunk=1000))
    assert sorted(streamed) == sorted(windows_local.events(1000, 7, 3) + windows_local.events(1000, 7, 3, 1000)
                                      + windows_local.events(500, 7, 3, 2000))
    assert streamed != sorted(streamed)


def test_bytewax_counts_as_the_floor_does_with_lateness_judged_per_key():
    # key 2's event is 300 ms behind the newest event but the first of its key
    pairs = [(0, 1), (1000, 1), (1300, 1), (1000, 2), (1299, 1), (2500, 2)]
    counts, facts = windows_local.bytewax_counts(pairs, size=1000, reorder_latency=256, batch_size=2)
    assert counts == windows_local.floor_counts(pairs, 1000, 256, per_key=True)[0]
    assert counts != windows_local.floor_counts(pairs, 1000, 256)[0]
    assert facts == {"emitted": len(counts), "late": 0}


@pytest.mark.slow
def test_windows_local_runs_every_system_and_finds_their_counts_equal(tmp_path):
    out = tmp_path / "report.json"
    done = run_benchmark("windows_local", "--events", "3000", "--memory-events", "4000", "--no-bytewax", "--out", str(out))
    report = json.loads(out.read_text())
    assert set(report["runs"]) == {"floor", "floor:disordered", "flamespark in order", "flamespark disordered",
                                   "flamespark buffered"}
    assert all(report["equal"].values())
    assert report["runs"]["floor:disordered"]["windows"] == 300  # 3 s of events of 100 keys
    assert report["memory"]["events"] == 4000 and report["memory"]["peak_rss_mb"] > 0
    assert "FlameSpark disordered / in order" in done.stdout


def test_the_levels_benchmark_runs_both_modes_and_finds_the_levels_exact(tmp_path):
    out = tmp_path / "report.json"
    done = run_benchmark("levels", "--seconds", "4", "--latencies", "100,1500", "--rate", "8000", "--keys", "5",
                         "--out", str(out))
    report = json.loads(out.read_text())
    assert report["equal"] == {mode: {"outputs_equal_min_latency": True, "final_equal_max_latency": True}
                               for mode in ("optimistic", "buffered")}
    for mode in ("optimistic", "buffered"):
        first, last = (report["runs"][f"{mode}: {name}"]["levels"][0] for name in ("min latency", "max latency"))
        levelled = report["runs"][f"{mode}: levels"]["levels"]
        assert levelled[0]["completeness"] == first["completeness"] < levelled[1]["completeness"]
        assert levelled[1]["completeness"] == last["completeness"] <= 1 and levelled[1]["corrections"] > 0
    assert "| optimistic: levels | 0.1 s |" in done.stdout


def test_the_levels_benchmark_measures_a_spark_run_by_its_rate_after_the_first_batch(spark):
    run = levels.one_run(3, 5, 1, (100, 1500), "buffered", 2000.0, "spark")
    assert [level["reorder_latency_ms"] for level in run["levels"]] == [100, 1500]
    assert run["levels"][0]["completeness"] < run["levels"][1]["completeness"] <= 1
    assert run["levels"][1]["corrections"] > 0
    assert run["peak_mb"] is None and run["events_per_s"] > 0  # Spark's memory is not this process's


@pytest.mark.slow
@pytest.mark.spark
def test_windows_vs_spark_writes_the_issues_report(spark, tmp_path, capsys):
    out = tmp_path / "report.json"
    code = windows_vs_spark.main(["--seconds", "3", "--rate", "100", "--keys", "5", "--warmup-events", "0",
                                  "--out", str(out)])
    report = json.loads(out.read_text())
    assert code == 0 and report["equal"] is True
    for system in ("flamespark", "spark_native"):
        assert report[system]["events_per_s"] > 0 and report[system]["batch_ms_p50"] > 0
        assert 0 < report[system]["latency_ms"]["p50"] <= report[system]["latency_ms"]["p99"]
        assert report[system]["windows"] == 15  # 3 s of events of 5 keys
    assert report["flamespark"]["speculative_latency_ms"]["p50"] > 0
    assert "equal counts: True" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.spark
def test_windows_vs_spark_unpaced_times_both_systems_in_fresh_processes(tmp_path):
    out = tmp_path / "report.json"
    done = run_benchmark("windows_vs_spark", "--unpaced", "--events", "3000", "--files", "3", "--rounds", "1",
                         "--keys", "5", "--out", str(out))
    report = json.loads(out.read_text())
    assert report["equal"] is True
    for system in ("flamespark", "spark_native"):
        assert report[system]["windows"] == 15 and report[system]["best_wall_s"] > 0
        assert report[system]["batches"] >= 3  # a micro-batch a file, or as many
    assert report["flamespark_to_native"] == report["flamespark"]["best_wall_s"] / report["spark_native"]["best_wall_s"]
    assert "FlameSpark / Spark's own (best wall time):" in done.stdout
