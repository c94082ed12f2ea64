"""`flamespark bench`: report files, keys, equal outputs, sweep points; release delays on Spark."""
import argparse
import json
import re
from pathlib import Path

import pytest

import flamespark as fs
from examples.inverted_index import graph as inverted_index
from flamespark.cli import main
from flamespark.cli.bench import sweep_points
from flamespark.io.jsonl import write_jsonl
from flamespark.tools.bench import bench as run_bench
from flamespark.tools.bench import WARM_UP_EVENTS, Runs, modes_agree, pace_warnings
from flamespark.tools.bench_plots import plot_batches, plot_latency
from flamespark.tools.bench_report import markdown as markdown_of
from flamespark.tools.disorder import disorder_events

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = f"{ROOT / 'examples' / 'inverted_index.py'}:graph"
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


@pytest.fixture
def events_file(tmp_path):
    """30 small documents, 30 % of them delayed; one of them beyond the 200 ms reorder latency."""
    docs = [{"ts": i * 50, "doc_id": i, "title": f"d{i}", "text": " ".join(WORDS[i % 7: i % 7 + 1 + i % 5])}
            for i in range(30)]
    arrival = disorder_events(docs, percent=30, stddev_ms=150, seed=3)
    arrival.remove(docs[5])
    arrival.append(docs[5])
    path = tmp_path / "docs.jsonl"
    write_jsonl(path, arrival)
    return path


def bench(tmp_path, events_file, *extra, engine="local"):
    out = tmp_path / "bench"
    # Small batches on the local engine, so that its unpaced runs replay; a paced run's batches are what arrived
    # while it worked, and bench refuses a batch size with --rate as flamespark run does.
    batched = engine == "local" and "--rate" not in extra
    argv = ["bench", PIPELINE, "--input", f"docs={events_file}", "--out", str(out), "--engine", engine,
            "--reorder-latency", "200", *(["--batch-size", "3"] if batched else []), *extra]
    assert main(argv) == 0
    return out, json.loads((out / "report.json").read_text())


def test_report_compares_both_modes(tmp_path, events_file, capsys):
    out, report = bench(tmp_path, events_file)
    assert {"report.json", "report.md", "latency.png"} <= {p.name for p in out.iterdir()}
    assert (out / "latency.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert report["outputs_equal"] is True
    assert report["engine"] == "local" and report["reorder_latency"] == 200 and report["pipeline"] == PIPELINE
    assert report["warm_up_events"] is report["warm_up_batch_rows"] is None  # no JVM to warm up
    assert set(report["machine"]) == {"cores", "python", "platform"}
    assert report["input"]["events"] == 30 and report["input"]["late"] == 1
    assert report["input"]["sources"]["docs"]["inversions"] > 0
    for mode in ("optimistic", "buffered"):
        metrics = report[mode]
        for key in ("events", "released", "tombstones", "replay_ratio", "late_dropped", "peak_buffered",
                    "events_per_s", "wall_s"):
            assert key in metrics
        assert set(metrics["latency_ms"]) >= {"p50", "p75", "p95", "p99"}
        assert metrics["late_dropped"] == 1
    assert report["optimistic"]["replay_ratio"] > 1.0
    assert report["buffered"]["replay_ratio"] == 1.0
    assert "sweep" not in report and not (out / "sweep.png").exists()
    assert report["pace_warnings"] == []  # an unpaced run has no clock to keep up with
    assert not (out / "batches.png").exists()  # the local engine runs no micro-batches
    markdown = (out / "report.md").read_text()
    assert "| replay ratio |" in markdown and "Outputs equal: **yes**" in markdown and "batches.png" not in markdown
    err = capsys.readouterr().err
    assert "bench: optimistic mode on the input ..." in err and f"bench: report in {out / 'report.md'}" in err
    assert re.search(r"latency p50 speculative [0-9.]+ m?s, optimistic final [0-9.]+ m?s, buffered final", err)


def test_report_has_three_latencies_and_the_share_retracted(tmp_path, events_file):
    _, report = bench(tmp_path, events_file)
    latencies = report["latencies_ms"]
    assert set(latencies) == {"speculative", "optimistic_final", "buffered_final"}
    assert latencies["optimistic_final"] == {key: report["optimistic"]["latency_ms"][key] for key in latencies["speculative"]}
    changes = report["optimistic"]["changes"]
    assert latencies["speculative"] == changes["speculative_latency_ms"]
    assert changes["retracted"] > 0 and report["retracted_share"] == changes["retracted"] / changes["added"]
    assert report["buffered"]["changes"] is None
    # Every early result is made before its release, which waits for the punctuation.
    assert latencies["speculative"]["p50"] <= latencies["optimistic_final"]["p50"]
    assert "Early results (`+` in the changelog) later retracted" in (tmp_path / "bench" / "report.md").read_text()


def test_spark_report_counts_release_delays_in_micro_batches(spark, tmp_path, events_file):
    # A short warm-up (two micro-batches a mode) keeps the test short; the bench's default is WARM_UP_EVENTS.
    out, report = bench(tmp_path, events_file, "--max-rows-per-batch", "10", "--warmup-events", "6", engine="spark")
    assert report["outputs_equal"] is True
    assert report["warm_up_events"] == 6 < WARM_UP_EVENTS
    means = {}
    for mode in ("optimistic", "buffered"):
        assert report[mode]["engine"]["name"] == "spark"
        delays = report[mode]["engine"]["release_delay_batches"]
        assert sum(delays["histogram"].values()) == report[mode]["released"]
        means[mode] = delays["mean"]
        timing = report[mode]["engine"]["batch_time"]
        stages = [stage["stage"] for stage in timing["stages"]]
        # Replayed sources are ingested as they are read: the first stateful operator is stage 1's.
        assert stages[0].startswith("1: ") and stages[-1].endswith("barrier"), stages
        assert timing["driver_ms"]["triggerExecution"] > 0 and timing["batches"] >= 1
        assert all(stage["rows_ms"] is not None and stage["commit_ms"] is not None for stage in timing["stages"])
        # Every stage's handlers report their own time, and the part of it in state-store calls, which they make.
        assert all(0 < stage["state_ms"] < stage["handler_ms"] for stage in timing["stages"]), timing["stages"]
        # Summed over the run, which the median batch is one of.
        assert all(stage["handler_ms"] <= stage["handler_total_ms"] and stage["state_ms"] <= stage["state_total_ms"]
                   < stage["handler_total_ms"] for stage in timing["stages"]), timing["stages"]
        # Unpaced, no batch is behind its input: every one applies what it reads.
        assert report[mode]["engine"]["regime"] == {"batches_behind": 0, "held_back": 0, "peak_held_back": 0}
    assert means["optimistic"] < means["buffered"]
    assert (out / "batches.png").read_bytes()[:4] == b"\x89PNG"
    markdown = (out / "report.md").read_text()
    assert "Each run's micro-batches (duration, events read): `batches.png`." in markdown
    assert "| micro-batches |" in markdown and "| release delay, mean (micro-batches) |" in markdown
    assert "| micro-batches behind their input | 0 | 0 |" in markdown
    assert "| items held back (peak at a batch's end) | 0 (0) | 0 (0) |" in markdown
    assert "| micro-batch p50, first / middle / last third (ms) |" in markdown
    assert "| run | mode | stage | on rows | in our handlers | of which state calls |" in markdown
    assert "| in our handlers over the run (s) | of which state calls (s) |" in markdown
    assert f"both modes ran unpaced on the first {report['warm_up_events']} events of each source, 3 a" in markdown
    assert "Where a micro-batch's time goes" in markdown and "| the input | optimistic | 1: " in markdown
    # A rate sweep's runs get rows of their own: here the input's runs stand in for those of a sweep at 7 events/s.
    point = dict(report, rate=7.0, **{mode: dict(report[mode], processed_per_s=6.0, sustained=False, batch_s=0.5)
                                      for mode in ("optimistic", "buffered")})
    swept = markdown_of(dict(report, rates=[point], highest_sustained={"optimistic": None, "buffered": None}))
    assert "| 7 events/s | optimistic | 1: " in swept and "| 7 events/s | buffered | 1: " in swept
    driver = r"^- the input, buffered, driver \((one batch|medians over [0-9]+ batches)\): triggerExecution "
    assert re.search(driver, markdown, re.MULTILINE)
    assert re.search(r"^\| optimistic \| [0-9,]+ \|", markdown, re.MULTILINE)


def test_sweep_runs_both_modes_at_every_percent(tmp_path, events_file):
    out, report = bench(tmp_path, events_file, "--sweep", "percent=0,30,60", "--stddev-ms", "100", "--seed", "4")
    assert (out / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    points = report["sweep"]
    assert [p["percent"] for p in points] == [0, 30, 60]
    assert all(p["outputs_equal"] and p["input"]["events"] == 30 for p in points)
    assert points[0]["input"]["sources"]["docs"]["inversions"] == 0
    assert points[0]["optimistic"]["replay_ratio"] == 1.0
    assert points[2]["input"]["sources"]["docs"]["inversions"] > 0
    assert all(p["stddev_ms"] == 100 and p["seed"] == 4 for p in points)
    assert "## Disorder sweep" in (out / "report.md").read_text()


def test_rates_run_both_modes_at_every_offered_rate(tmp_path, events_file):
    """30 documents offered at 400/s take at least 72 ms; at 1e6/s no engine keeps up. The reorder latency
    covers every delay, so no batching of the arrivals makes an event late."""
    out, report = bench(tmp_path, events_file, "--rates", "400,1000000", "--reorder-latency", "5000")
    assert (out / "rates.png").read_bytes()[:4] == b"\x89PNG"
    points = report["rates"]
    assert [p["rate"] for p in points] == [400, 1_000_000]
    assert all(p["outputs_equal"] and p["late_equal"] and p["input"]["late"] == 0 for p in points)
    for mode in ("optimistic", "buffered"):
        slow, fast = points[0][mode], points[1][mode]
        assert slow["wall_s"] >= 29 / 400 and slow["events_per_s"] <= 400 * 30 / 29
        assert fast["sustained"] is False
        assert slow["sustained"] == (slow["events_per_s"] >= 0.95 * 400)
        assert slow["batch_s"] is None  # the local engine runs no micro-batches
    assert report["highest_sustained"] == {mode: 400 if points[0][mode]["sustained"] else None
                                           for mode in ("optimistic", "buffered")}
    markdown = (out / "report.md").read_text()
    assert "## Latency against offered rate" in markdown and "Highest rate sustained" in markdown
    # The local engine reports no micro-batches, so none behind its input either.
    assert "| batch p50 (s) | batches behind | items held back (peak) | outputs equal |" in markdown
    assert "| micro-batches behind their input | - | - |" in markdown


@pytest.mark.parametrize("spacing_ms, warned", [(20, False), (10, True)])
def test_a_paced_input_whose_event_time_runs_slower_than_the_clock_is_warned_of(spacing_ms, warned, tmp_path, capsys):
    """Offered at 50 a second, documents 20 ms apart replay in real time; 10 ms apart, at half the clock."""
    events = tmp_path / "docs.jsonl"
    write_jsonl(events, [{"ts": i * spacing_ms, "doc_id": i, "title": "t", "text": "a b"} for i in range(5)])
    out, report = bench(tmp_path, events, "--rate", "50", "--rates", "100,50")
    warning = ("at 50 events/s the event time of source 'docs' runs at 0.50x the clock (its 5 events span 0.04 s of "
               "event time, offered over 0.08 s), so a reorder latency of 200 ms waits about 0.4 s: offer it at 100 "
               "events/s, or space its events 20 ms apart, to replay it in real time")
    assert report["pace_warnings"] == ([warning] if warned else [])
    err = capsys.readouterr().err
    assert (f"bench: warning: {warning}\n" in err) == warned
    assert ("; event time ran slower than the clock (see the warnings)" in err) == warned
    assert (f"**Warning:** {warning}." in (out / "report.md").read_text()) == warned


def test_each_of_several_sources_keeps_up_with_the_clock_at_its_share_of_the_rate():
    """Two sources taken in turn at 20 events/s are each offered 10 a second: 100 ms apart keeps up."""
    spaced = lambda ms: [(ms * k, {}) for k in range(50)]  # noqa: E731
    assert pace_warnings({"a": spaced(100), "b": spaced(100)}, [20, None], 3000) == []
    # once for a rate given twice, none unpaced; of several latencies, the first (the release's)
    assert pace_warnings({"a": spaced(100), "b": spaced(50)}, [20, None, 20], (3000, 9000)) == [
        "at 20 events/s (10 for each of 2 sources) the event time of source 'b' runs at 0.50x the clock (its 50 "
        "events span 2.45 s of event time, offered over 4.9 s), so a reorder latency of 3000 ms waits about 6 s: "
        "offer it at 40 events/s, or space its events 100 ms apart, to replay it in real time"]


@pytest.mark.parametrize("speculative, final", [((300, 700), (2500, 4200)), ((20, 110), (2500, 3500)),
                                                 ((0, 90), (2500, 40_000))])
def test_the_latency_plot_labels_its_time_axis_with_plain_numbers_apart(speculative, final, tmp_path):
    spread = lambda low, high: list(range(low, high + 1, max(1, (high - low) // 50)))  # noqa: E731
    latencies = {"speculative": spread(*speculative), "optimistic": spread(*final), "buffered": spread(*final)}
    axes = plot_latency(latencies, tmp_path / "latency.png").axes[0]
    assert (tmp_path / "latency.png").read_bytes()[:4] == b"\x89PNG"
    low, high = axes.get_xlim()
    labels = [label for label in axes.get_xticklabels() if low <= label.get_position()[0] <= high]
    assert len(labels) >= 3 and all(re.fullmatch(r"[0-9,.]+", label.get_text()) for label in labels)
    assert [label.get_text() for label in axes.get_xticklabels(minor=True) if label.get_text()] == []
    boxes = sorted((box.x0, box.x1) for box in (label.get_window_extent() for label in labels))
    assert all(right < left for (_, right), (left, _) in zip(boxes, boxes[1:])), boxes


def test_batches_plot_draws_a_row_of_plots_per_run(tmp_path):
    """Two runs, one with a batch whose duration Spark did not report: a row of two plots per run, each row
    3.4 inches high on a figure two plots (12.8 inches) wide."""
    def entry(durations):
        timeline = [{"start_s": 0.5 * index, "duration_ms": ms, "events": index} for index, ms in enumerate(durations)]
        return {mode: {"engine": {"timeline": timeline}} for mode in ("optimistic", "buffered")}

    path = tmp_path / "batches.png"
    plot_batches([("the input, unpaced", entry([900])), ("10 events/s", entry([2000, None, 450]))], path)
    assert path.read_bytes()[:4] == b"\x89PNG"
    from PIL import Image  # matplotlib's own dependency

    width, height = Image.open(path).size
    assert height / width == pytest.approx(2 * 3.4 / 12.8, rel=0.02)


def test_modes_that_took_different_events_as_late_are_not_held_to_equal_outputs():
    point = {"outputs_equal": False, "late_equal": False}
    assert modes_agree(dict(point, sweep=[], rates=[])) is True
    assert modes_agree({"outputs_equal": False, "late_equal": True}) is False
    assert modes_agree({"outputs_equal": True, "late_equal": True, "rates": [dict(point, late_equal=True)]}) is False


def test_bench_is_a_function_of_typed_arguments(tmp_path, events_file):
    report = run_bench(inverted_index, {"docs": events_file}, tmp_path / "bench", engine="local", reorder_latency=200,
                       sweep=[0])
    assert report["pipeline"] == "inverted_index" and report["outputs_equal"] is True
    assert [point["percent"] for point in report["sweep"]] == [0]
    assert json.loads((tmp_path / "bench" / "report.json").read_text()) == report
    with pytest.raises(fs.OptionError, match="warmup_events is a count of events .* got 5 with engine='local'"):
        run_bench(inverted_index, {"docs": events_file}, tmp_path / "out", engine="local", warmup_events=5)
    with pytest.raises(fs.OptionError, match="engine must be one of local, spark, got 'flink'"):
        run_bench(inverted_index, {"docs": events_file}, tmp_path / "other", engine="flink")


def test_a_warm_up_of_no_events_runs_nothing_and_a_negative_count_is_refused(tmp_path, events_file, capsys):
    runs = Runs("spark", 200, "drop", None, None, tmp_path / "checkpoints", None)
    facts = runs.warm_up(inverted_index, {"docs": [(0, {"doc_id": 0, "text": "a"})]}, 0)
    assert facts == {"warm_up_events": 0, "warm_up_batch_rows": None}
    assert not (tmp_path / "checkpoints").exists()  # a run would have made its checkpoint there
    with pytest.raises(SystemExit):
        main(["bench", PIPELINE, "--input", f"docs={events_file}", "--out", str(tmp_path / "out"),
              "--warmup-events", "-1"])
    assert "argument --warmup-events: must be >= 0, not -1" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text", ["percent=", "percent=5,x", "ratio=10", "percent=120"])
def test_bad_sweeps_are_rejected(text):
    with pytest.raises(argparse.ArgumentTypeError, match="percent"):
        sweep_points(text)


@pytest.mark.spark  # in processes of their own, without the spark fixture
@pytest.mark.slow
def test_scaling_runs_the_same_spark_run_on_each_master(tmp_path, events_file):
    out, report = bench(tmp_path, events_file, "--scaling", "local[1],local[2]")
    scaling = report["scaling"]
    assert scaling["mode"] == "optimistic" and [run["master"] for run in scaling["runs"]] == ["local[1]", "local[2]"]
    for run in scaling["runs"]:
        # The document that arrives last, beyond the reorder latency, is late on every master, in any batch.
        assert run["events"] == 29 and run["events_per_s"] > 0 and run["batches"] >= 1
        assert (out / "scaling" / run["master"].replace("[", "_").rstrip("]") / "index.jsonl").exists()
    assert scaling["speedup"] == scaling["runs"][1]["events_per_s"] / scaling["runs"][0]["events_per_s"]
    markdown = (out / "report.md").read_text()
    assert "## Scaling with cores" in markdown and f"**{scaling['speedup']:.2f}x**" in markdown
