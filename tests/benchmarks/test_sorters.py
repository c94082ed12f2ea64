"""The sorter benchmark (benchmarks/sorters.py): every sorter gives a stable sort of the kept events, its plan's
figures are what a step-by-step count gives, and the script runs."""
import math

import numpy as np
import pytest

from benchmarks.lib import sorter_bench as bench
from benchmarks.sorters import main
from flamespark.core.errors import InternalError, OptionError


def test_bench_sorters_agree():
    for name, ts in [
        ("synthetic", bench.synthetic(3000, np.random.default_rng(5), d=20)),
        ("sources", bench.interleaved(3000, np.random.default_rng(6), 8, 300,
                                      burst=3)),
    ]:
        latency = bench.reorder_latency(ts, 0.99)
        for freq in (1, 7, 100, 5000):
            segments, stats = bench.plan(ts, freq, latency)
            outs = {m: bench.drive(make, segments)[1]
                    for m, make in bench.METHODS.items()}
            for m, out in outs.items():
                assert out == stats["expected"], (name, freq, m)


def test_bench_plan_stats():
    ts = bench.synthetic(500, np.random.default_rng(2), d=15)
    latency = 10
    for freq in (1, 3, 50, 1000):
        segments, stats = bench.plan(ts, freq, latency)
        # Recompute late events and the mean buffer size step by step.
        held = []
        buffer = []
        hi = T = -math.inf
        late = 0
        for i, t in enumerate(ts.tolist()):
            if t <= T:
                late += 1
            else:
                hi = max(hi, t)
                buffer.append(t)
                held.append(len(buffer))
            if i % freq == freq - 1 or i == len(ts) - 1:
                T = hi - latency
                buffer = [b for b in buffer if b > T]
        assert stats["late"] == late
        assert stats["events"] == sum(len(seg[0]) for seg in segments)
        assert stats["buffered"] == pytest.approx(np.mean(held))


def test_bench_sorters_command_runs(capsys):
    assert main(["--events", "3000", "--frequencies", "10,1000", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "speedup" in out and out.count("synthetic") >= 2
    # --quick sets the sizes not given: an explicit --events still counts.
    assert main(["--quick", "--events", "3000", "--frequencies", "1000", "--workloads",
                 "synthetic"]) == 0
    assert capsys.readouterr().out.startswith("# 3,000 events per workload, seed 1, best of 1,")


def test_bench_run_returns_rows_and_refuses_a_wrong_sorter(monkeypatch):
    settings = bench.Settings(events=2000, frequencies=(10, 100), repeat=1, methods=("impatience", "heapq"))
    rows = bench.run(settings)
    assert [(row.workload, row.frequency) for row in rows] == [
        ("synthetic", 10), ("synthetic", 100), ("sources", 10), ("sources", 100)]
    assert all(set(row.rates) == {"impatience", "heapq"} and row.events + row.late == 2000 for row in rows)
    assert bench.format_table(rows, settings).splitlines()[3].split() == [
        "workload", "F", "latency", "buffered", "late", "impatience", "heapq", "speedup"]

    class Forgetful(bench.HeapSorter):
        def flush(self, T):
            return super().flush(T)[1:]

    monkeypatch.setitem(bench.METHODS, "forgetful", Forgetful)
    with pytest.raises(InternalError, match="sorter forgetful gave a wrong output"):
        bench.run(bench.Settings(events=500, frequencies=(10,), repeat=1, methods=("forgetful",)))
    with pytest.raises(OptionError, match="methods must be chosen from"):
        bench.Settings(methods=("bogo",))
