"""The running-sum benchmark (benchmarks/running_sum.py) runs end to end at a small size, Bytewax included, and
finds every system's outputs equal to the floor's; Bytewax's exact path against hand-worked cases; a FlameSpark run
that differs fails the run."""
import json

import pytest

from benchmarks import running_sum
from tests.benchmarks.typed import run_benchmark
from tests.doctests import assert_runs, examples_of


def test_the_examples_in_its_docstrings():
    tests = examples_of(running_sum)
    assert len(tests) >= 4
    for test in tests:
        assert_runs(test)


def payloads(pairs):
    return [payload for _, payload in running_sum.readings(pairs)]


def test_bytewax_sums_each_key_in_event_time_order_across_its_windows():
    # each key's events cross several 1 s windows, in a disorder that the reorder latency covers
    pairs = [(0, 1), (900, 2), (1100, 1), (950, 1), (2000, 2), (1900, 1), (3100, 1), (2999, 2), (3000, 1)]
    outputs, facts = running_sum.bytewax_outputs(payloads(pairs), reorder_latency=256, size=1000, batch_size=2)
    floor = running_sum.floor_outputs(running_sum.readings(pairs), 256)[0]
    assert running_sum.per_key(outputs) == running_sum.per_key(floor)
    assert [ts for ts, _ in running_sum.per_key(outputs)[1]] == [0, 950, 1100, 1900, 3000, 3100]
    assert facts == {"late": 0}


def test_bytewax_judges_lateness_per_key_as_the_per_key_floor_does():
    # key 2's event at 1000 is 300 ms behind the newest event but the first of its key; key 1's at 1000 is late
    pairs = [(0, 1), (1300, 1), (1000, 2), (1000, 1), (2500, 2)]
    outputs, facts = running_sum.bytewax_outputs(payloads(pairs), reorder_latency=256, size=1000, batch_size=1)
    by_key = running_sum.floor_outputs(running_sum.readings(pairs), 256, clock=lambda payload: payload["key"])[0]
    overall = running_sum.floor_outputs(running_sum.readings(pairs), 256)[0]
    assert running_sum.per_key(outputs) == running_sum.per_key(by_key) != running_sum.per_key(overall)
    assert facts == {"late": 1}


def test_a_flamespark_run_whose_outputs_differ_fails_the_run(monkeypatch, tmp_path, capsys):
    right = running_sum.flamespark_outputs

    def wrong(pairs, reorder_latency, mode):
        outputs, facts = right(pairs, reorder_latency, mode)
        return outputs[:-1], facts

    monkeypatch.setattr(running_sum, "in_child", lambda function, *args: function(*args))  # to see the patch
    monkeypatch.setattr(running_sum, "flamespark_outputs", wrong)
    out = tmp_path / "report.json"
    assert running_sum.main(["--events", "500", "--repeat", "2", "--no-bytewax", "--out", str(out)]) == 1
    report = json.loads(out.read_text())
    assert report["equal"] == {"floor": True, "floor:disordered": True, "flamespark in order": False,
                               "flamespark disordered": False, "flamespark buffered": False}
    in_order = report["runs"]["flamespark in order"]
    assert in_order["differing_keys"] == 1 and len(in_order["rounds_cpu_s"]) == 2
    assert in_order["cpu_s"] == sum(in_order["rounds_cpu_s"]) / 2  # the median of two
    printed = capsys.readouterr().out.splitlines()
    assert printed[3].startswith("flamespark in order") and printed[3].split()[-4] == "False"


@pytest.mark.slow
def test_running_sum_runs_every_system_with_bytewax_and_finds_their_outputs_equal(tmp_path):
    out = tmp_path / "report.json"
    done = run_benchmark("running_sum", "--events", "3000", "--repeat", "1", "--bytewax-batches", "1,1000",
                         "--out", str(out))
    report = json.loads(out.read_text())
    assert list(report["runs"]) == ["floor", "floor:disordered", "flamespark in order", "flamespark disordered",
                                    "flamespark buffered", "bytewax batch 1", "bytewax batch 1000"]
    assert all(report["equal"].values())  # no event of these 3 s is late, for a key or for all of them
    for batch in (1, 1000):
        bytewax = report["runs"][f"bytewax batch {batch}"]
        assert bytewax["equal_to_per_key_floor"] and bytewax["outputs"] == 3000 and bytewax["late"] == 0
    assert report["runs"]["flamespark disordered"]["outputs"] == 3000
    assert report["ratios"]["wall"]["bytewax_batch_1000_to_flamespark"] > 0
    assert "Bytewax batch 1000 / FlameSpark disordered" in done.stdout
