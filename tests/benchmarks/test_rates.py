"""benchmarks/rates.py, run as the benchmarks page shows it: one bench a rate, each on documents spaced for it."""
import json

import pytest

from tests.benchmarks.typed import run_benchmark


@pytest.mark.slow
def test_each_rate_runs_on_documents_whose_event_time_keeps_up_with_the_clock(tmp_path):
    out = tmp_path / "rates"
    done = run_benchmark("rates", "--synthetic", "20", "--rates", "50,100", "--engine", "local", "--reorder-latency",
                         "100", "--out", str(out), timeout=300)
    for rate, spacing_ms in ((50, 20), (100, 10)):
        stamps = sorted(json.loads(line)["ts"] for line in (out / f"docs-{rate}-disordered.jsonl").open())
        assert stamps == [spacing_ms * k for k in range(20)]
        report = json.loads((out / str(rate) / "report.json").read_text())
        assert report["rate"] == rate and report["pace_warnings"] == [] and report["outputs_equal"]
        assert report["input"]["sources"]["docs"]["inversions"] > 0  # disordered, 30 % by default
    summary = json.loads((out / "rates.json").read_text())
    assert [point["rate"] for point in summary["rates"]] == [50, 100]
    assert all("sustained" in point[mode] for point in summary["rates"] for mode in ("optimistic", "buffered"))
    assert (out / "rates.png").read_bytes()[:4] == b"\x89PNG"
    assert done.stdout.startswith("## Latency against offered rate") and "| 100 | buffered |" in done.stdout
    assert "warning" not in done.stderr
