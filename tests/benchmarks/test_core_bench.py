"""`benchmarks/core.py` on a few documents: every figure is there and every pair of outputs is checked equal."""
from pathlib import Path

import pytest

from benchmarks.lib.core_bench import bench_core, table
from flamespark.core.errors import InputError
from flamespark.io.jsonl import write_jsonl
from flamespark.tools.loader import load_module

REPOSITORY = Path(__file__).resolve().parents[2]
EXAMPLES = REPOSITORY / "examples"
TUNED = REPOSITORY / "benchmarks" / "inverted_index_tuned.py"


@pytest.mark.slow
def test_core_bench_reports_every_run(tmp_path):
    """A reorder latency above every delay: no event is late, so every pair of runs must agree."""
    docs = [{"ts": i * 50, "doc_id": i, "text": f"word{i % 3} shared text {i}"} for i in range(12)]
    write_jsonl(tmp_path / "docs.jsonl", docs)
    report = bench_core(tmp_path / "docs.jsonl", index_pipeline=TUNED,
                        sum_pipeline=EXAMPLES / "running_sum.py", reorder_latency=5000, rate=2000,
                        overload_rate=100_000, readings=500, repeat=2)
    outputs = load_module(TUNED).in_order_index(docs)
    expected = len(outputs["index"]) + len(outputs["docs"])
    assert report["documents"] == 12 and report["in_order"]["engine"]["released"] == expected
    assert report["in_order"]["outputs_equal"] is True
    assert report["in_order"]["ratio"] == report["in_order"]["engine"]["wall_s"] / report["in_order"]["plain"]["wall_s"]
    assert len(report["in_order"]["pair_ratios"]) == 2 and min(report["in_order"]["pair_ratios"]) > 0
    assert report["in_order"]["engine"]["cpu_s"] > 0 and report["in_order"]["plain"]["cpu_s"] > 0
    assert len(report["in_order"]["cpu_pair_ratios"]) == 2 and report["in_order"]["cpu_ratio"] > 0
    assert [entry["rate"] for entry in report["paced"]] == [2000, 2000, 100_000]
    for entry in report["paced"]:
        assert entry["outputs_equal"] is True
        for mode in ("optimistic", "buffered"):
            run = entry[mode]
            assert run["documents"] == 12 and 0 < run["released"] <= expected
            assert 0 < run["before_run_mb"] <= run["peak_mb"] and set(run["latency_ms"]) == {"p50", "p75", "p95", "p99"}
        assert entry["buffered"]["replay_ratio"] == 1.0
        assert len(entry["pair_ratios"]) == 2 and all(ratio > 0 for ratio in entry["pair_ratios"])
    assert report["running_sum"]["released"] == 500
    sums = report["running_sum"]["runs_events_per_s"]
    assert len(sums) == 2 and report["running_sum"]["events_per_s"] == min(sums)
    changelog = report["changelog"]
    assert changelog["outputs_equal"] is True and len(changelog["wall_s"]["on"]) == 2
    assert changelog["cost_ratio"] > 0 and changelog["paced"]["changes"]["added"] >= expected
    spread = changelog["speculative_p50_ms"]
    assert len(spread) == 2 and changelog["paced"]["changes"]["speculative_latency_ms"]["p50"] == min(spread)
    assert len(changelog["pair_ratios"]) == 2 and all(ratio > 0 for ratio in changelog["pair_ratios"])
    assert len(changelog["cpu_pair_ratios"]) == 2 and changelog["cpu_cost_ratio"] > 0
    text = table(report)
    assert "| **ratio** |" in text and "Outputs equal in every pair." in text and "pair by pair" in text
    assert "of which before the run" in text and "before its run started" in text and "the median of 2 runs" in text
    assert "| CPU (s) |" in text and "in CPU time" in text
    assert "the median docs/s of 2 alternating pairs" in text and ", 100000 docs/s: " in text
    assert "events/s, the median of 2 runs" in text
    assert f"**{report['in_order']['ratio']:.2f}x** | {report['in_order']['cpu_ratio']:.2f}x |" in text


def test_core_bench_refuses_bad_input_before_its_first_run(tmp_path):
    docs = tmp_path / "docs.jsonl"
    write_jsonl(docs, [{"ts": 0, "doc_id": 0, "text": "a b"}])
    said = []
    examples = {"index_pipeline": TUNED, "sum_pipeline": EXAMPLES / "running_sum.py"}
    with pytest.raises(InputError, match="running_sum.py has no in_order_index, which benchmarks/core.py needs of it"):
        bench_core(docs, **{**examples, "index_pipeline": EXAMPLES / "running_sum.py"}, say=said.append)
    with pytest.raises(InputError, match="missing.py"):
        bench_core(docs, **{**examples, "sum_pipeline": tmp_path / "missing.py"}, say=said.append)
    with pytest.raises(InputError, match="nothing.jsonl"):
        bench_core(tmp_path / "nothing.jsonl", **examples, say=said.append)
    write_jsonl(docs, [{"ts": 0, "doc_id": 0, "text": "a b"}, {"ts": 5, "text": "no id"}])
    with pytest.raises(InputError, match=r"docs.jsonl: the document of ts 5 is not one inverted_index_tuned.py takes "
                                         r"\(KeyError: 'doc_id'\)"):
        bench_core(docs, **examples, say=said.append)
    assert said == []  # no run had started


def test_the_command_finds_the_examples_from_any_directory_and_names_the_option_for_a_missing_one(
        tmp_path, monkeypatch, capsys):
    from benchmarks.core import build_parser, main

    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(["docs.jsonl"])
    assert args.index_pipeline == TUNED and args.sum_pipeline == EXAMPLES / "running_sum.py"
    write_jsonl(tmp_path / "docs.jsonl", [{"ts": 0, "doc_id": 0, "text": "a b"}])
    assert main(["docs.jsonl", "--sum-pipeline", "gone.py"]) == 1
    assert "benchmarks/core.py: error: --sum-pipeline gone.py: no such file" in capsys.readouterr().err
