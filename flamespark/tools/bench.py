"""The optimistic mode against the buffered baseline on the same input (`flamespark bench`).

`bench` writes OUT/report.json, OUT/report.md and OUT/latency.png; with a
`sweep` of disorder percents it also reruns both modes on inputs
re-disordered at each percent (from the input sorted by ts) and writes
OUT/sweep.png; with `scaling` masters, it reports the same unpaced Spark run
on each (`flamespark.tools.scaling`).
"""
from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from flamespark.api import run
from flamespark.core.codec import pack
from flamespark.core.errors import OptionError
from flamespark.graph import Graph
from flamespark.io.inputs import read_input
from flamespark.io.atomic import write_atomic
from flamespark.runtime.metrics import PERCENTILES, percentiles
from flamespark.runtime.options import MODES, RunOptions
from flamespark.tools.disorder import count_inversions, count_runs, disorder_pairs
from flamespark.tools.machine import machine
from flamespark.tools.runner import check_inputs, checkpoint_directory, spark_options_given
from flamespark.tools.scaling import scaling_markdown, scaling_runs


def _progress(text: str):
    print(f"bench: {text}", file=sys.stderr, flush=True)


# Events per source of the Spark warm-up runs (`Runs.warm_up`), and how many a micro-batch.
WARM_UP_EVENTS = 60
WARM_UP_BATCH_ROWS = 3


@dataclass(frozen=True)
class Runs:
    """How the bench runs a graph: engine and run options, the same for every run it compares."""

    engine: str
    reorder_latency: int
    late: str
    rate: float | None
    master: str | None
    checkpoint: Path
    max_rows_per_batch: int | None
    ingest_partitions: int | None = None

    def run(self, graph, inputs: dict, mode: str, label: str):
        """One run of `mode` (the optimistic one keeps a changelog); a Spark run keeps its checkpoint under
        `checkpoint/label/mode`."""
        options = dict(mode=mode, reorder_latency=self.reorder_latency, late=self.late, rate=self.rate,
                       changes=mode == "optimistic")
        if self.engine == "local":
            return run(graph, inputs, **options)
        checkpoint = self.checkpoint / label / mode
        shutil.rmtree(checkpoint, ignore_errors=True)
        return run(graph, inputs, engine="spark", master=self.master, checkpoint=checkpoint,
                   max_rows_per_batch=self.max_rows_per_batch, ingest_partitions=self.ingest_partitions, **options)

    def warm_up(self, graph, events: dict) -> int:
        """Run both modes unpaced on the first WARM_UP_EVENTS events of each source, WARM_UP_BATCH_ROWS a
        micro-batch, discarding the results, so that the measured runs share a JVM that has run many batches:
        the first run in a fresh one took twice as long a micro-batch here, and one warm-up batch per mode did
        not make up for it where twenty did. Returns the fewest events a source gave it."""
        first = {name: pairs[:WARM_UP_EVENTS] for name, pairs in events.items()}
        for mode in MODES:
            _progress(f"warm-up: {mode} ...")
            replace(self, rate=None, max_rows_per_batch=WARM_UP_BATCH_ROWS).run(graph, first, mode, "warm-up")
        return min(map(len, first.values()), default=0)

    def compare(self, graph, events: dict, label: str, inputs: dict, title: str) -> tuple[dict, dict]:
        """Both modes on `inputs` (what `run` takes: `events` itself, or their files for spark).

        `events` are the (ts, payload) pairs per source in arrival order;
        `label` names the runs' checkpoints, `title` the input in progress
        lines. Returns the report entry and the raw latencies of each of
        LATENCIES.
        """
        entry = {"input": input_facts(events)}
        outputs, latencies, late = {}, {}, {}
        for mode in MODES:
            _progress(f"{mode} mode on {title} ...")
            result = self.run(graph, inputs, mode, label)
            latencies[mode] = result.latencies_ms
            if mode == "optimistic":
                latencies["speculative"] = result.speculative_latencies_ms
            metrics = result.metrics
            _progress(f"{mode} mode on {title}: done in {_number(metrics.get('wall_s'))} s, "
                      f"replay ratio {_number(metrics.get('replay_ratio'), 3)}, "
                      f"p50 {_number(metrics['latency_ms']['p50'], 1)} ms")
            entry[mode] = metrics
            outputs[mode] = result.outputs
            late[mode] = (sorted((letter["source"], letter["ts"], pack(letter["payload"])) for letter in result.late),
                          metrics["late_adjusted"])
        entry["latencies_ms"] = {kind: percentiles(latencies[source]) for kind, source, _ in LATENCIES}
        entry["retracted_share"] = entry["optimistic"]["changes"]["retracted_share"]
        optimistic = entry["optimistic"]
        entry["input"]["late"] = optimistic.get("late_dropped", 0) + optimistic.get("late_adjusted", 0)
        entry["outputs_equal"] = outputs["optimistic"] == outputs["buffered"]
        # A paced run judges lateness per batch of waiting arrivals, so beyond the reorder latency the two
        # modes may drop different events; their outputs are comparable only where they dropped the same.
        entry["late_equal"] = late["optimistic"] == late["buffered"]
        return entry, latencies


# The three latencies of a bench run: (report key, key of `compare`'s raw latencies, what it measures).
LATENCIES = (
    ("speculative", "speculative", "speculative: arrival to the early result never retracted"),
    ("optimistic_final", "optimistic", "optimistic final: arrival to release"),
    ("buffered_final", "buffered", "buffered final: arrival to release"),
)


def headline(entry: dict) -> str:
    """The three latencies' medians in one line."""
    medians = entry["latencies_ms"]
    return "latency p50 " + ", ".join(f"{kind.replace('_', ' ')} {_seconds(medians[kind]['p50'])}"
                                      for kind, _, _ in LATENCIES)


def _seconds(ms) -> str:
    if ms is None:
        return "-"
    return f"{ms:.1f} ms" if ms < 1000 else f"{ms / 1000:.2f} s"


def input_facts(events: dict) -> dict:
    per_source = {}
    for name, pairs in events.items():
        stamps = [ts for ts, _ in pairs]
        per_source[name] = {"events": len(stamps), "inversions": count_inversions(stamps), "runs": count_runs(stamps)}
    return {"events": sum(s["events"] for s in per_source.values()), "sources": per_source}


def sweep_points(graph, events: dict, runs: Runs, percents: Sequence[float], stddev_ms: float, seed: int) -> list:
    """Both modes at every disorder percent of `percents`, from the events sorted by ts."""
    ordered = {name: sorted(pairs, key=lambda pair: pair[0]) for name, pairs in events.items()}
    points = []
    for percent in percents:
        disordered = {}
        for index, (name, pairs) in enumerate(ordered.items()):
            disordered[name] = disorder_pairs(pairs, percent, stddev_ms, seed + index)
        entry, _ = runs.compare(graph, disordered, f"percent_{percent:g}", disordered,
                                f"the input sorted, then {percent:g} % delayed")
        entry.update(percent=percent, stddev_ms=stddev_ms, seed=seed)
        points.append(entry)
    return points


# A mode sustains an offered rate when it processes at least this share of it.
SUSTAINED = 0.95


def processed_per_s(metrics: dict):
    """The events/s a paced run processed: on Spark from its second micro-batch on, since the first starts the
    query's Python workers and state stores (seconds) before its one event per source; else over the whole
    run."""
    after = metrics["engine"].get("after_first_batch")
    return after["events_per_s"] if after else metrics["events_per_s"]


def rate_points(graph, events: dict, runs: Runs, rates: Sequence[float], inputs: dict) -> list:
    """Both modes on the same input offered at every rate of `rates` (events/s)."""
    points = []
    for rate in rates:
        entry, _ = replace(runs, rate=rate).compare(graph, events, f"rate_{rate:g}", inputs,
                                                    f"the input at {rate:g} events/s")
        entry["rate"] = rate
        for mode in MODES:
            metrics = entry[mode]
            batch_ms = metrics["engine"].get("batch_duration_ms", {}).get("p50")
            metrics["sustained"] = (processed_per_s(metrics) or 0) >= SUSTAINED * rate
            metrics["batch_s"] = batch_ms / 1000 if batch_ms is not None else None
        points.append(entry)
    return points


def highest_sustained(points: list) -> dict:
    """Per mode, the highest offered rate it sustained (None if none)."""
    return {mode: max((point["rate"] for point in points if point[mode]["sustained"]), default=None)
            for mode in MODES}


def bench(graph: Graph, inputs: Mapping[str, str | Path], out: str | Path, *, engine: str = "spark",
          reorder_latency: int = 0, late: str = "drop", rate: float | None = None, master: str | None = None,
          checkpoint: str | Path | None = None, max_rows_per_batch: int | None = None,
          sweep: Sequence[float] = (), stddev_ms: float = 1000.0, seed: int = 0, rates: Sequence[float] = (),
          title: str | None = None, ingest_partitions: int | None = None, scaling: Sequence[str] = (),
          pipeline: str | None = None) -> dict:
    """Run `graph` in both modes over `inputs` (source name to a JSONL file or a directory) and return the report.

    The report is also written to `out` (report.json, report.md, latency.png).
    With `sweep`, a list of disorder percents, both modes also run at each of
    them, on the events sorted by ts and re-disordered by `disorder_events`
    with `stddev_ms` and `seed`; `out/sweep.png` plots them. With `rates`
    (events/s), both modes also run on the input offered at each rate, the
    report says the highest rate each sustains (processing at least 95 % of
    it), and `out/rates.png` plots latency against rate. Spark runs keep
    their checkpoints under `checkpoint` (default `out/_checkpoint`), one per
    run. `title` names the pipeline in the report (default: the graph's name).
    With `scaling`, Spark masters such as `local[1]` and `local[2]`, the
    optimistic mode also runs unpaced on each, in processes of their own
    that load `pipeline` (`PATH.py:ATTR`, the file `graph` came from), and
    the report gives the events/s of each and their ratio.
    The other options are `flamespark.run`'s; `rate` paces the local engine's
    input too.
    """
    # flamespark.run's errors, before any work
    RunOptions.of(engine, reorder_latency=reorder_latency, late=late, rate=rate,
                  **spark_options_given(master=master, checkpoint=checkpoint, max_rows_per_batch=max_rows_per_batch,
                                        ingest_partitions=ingest_partitions))
    paths = check_inputs(graph, inputs)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if scaling and pipeline is None:
        raise OptionError("bench: scaling runs load the graph in processes of their own and need its PATH.py:ATTR")
    # Before any run here starts a JVM of its own, which would take memory and cores from them.
    scaled = scaling_runs(pipeline, paths, out / "scaling", scaling, reorder_latency=reorder_latency, late=late,
                          max_rows_per_batch=max_rows_per_batch, ingest_partitions=ingest_partitions) if scaling else None
    runs = Runs(engine, reorder_latency, late, rate, master, checkpoint_directory(out, checkpoint), max_rows_per_batch,
                ingest_partitions)
    events = {name: read_input(name, path) for name, path in paths.items()}
    warmed = runs.warm_up(graph, events) if engine == "spark" else None
    main, latencies = runs.compare(graph, events, "input", events if engine == "local" else paths, "the input")
    report = {
        "pipeline": title or graph.name,
        "engine": engine,
        "reorder_latency": reorder_latency,
        "late_policy": late,
        "rate": rate,
        "machine": machine(),
        "warm_up_events": warmed,
        **main,
    }
    if scaled:
        report["scaling"] = scaled
    plot_latency(latencies, out / "latency.png")
    if sweep:
        report["sweep"] = sweep_points(graph, events, runs, sweep, stddev_ms, seed)
        plot_sweep(report["sweep"], out / "sweep.png")
    if rates:
        report["rates"] = rate_points(graph, events, runs, rates, events if engine == "local" else paths)
        report["highest_sustained"] = highest_sustained(report["rates"])
        plot_rates(report["rates"], out / "rates.png")
    write_atomic(out / "report.md", markdown(report))
    write_atomic(out / "report.json", json.dumps(report, indent=2) + "\n")
    return report


def modes_agree(report: dict) -> bool:
    """Whether both modes released the same outputs on the input and at every sweep and rate point at which
    they took the same events as late (exactness promises nothing more)."""
    points = [report] + report.get("sweep", []) + report.get("rates", [])
    return all(point["outputs_equal"] or not point["late_equal"] for point in points)


# ----------------------------------------------------------------- report


def _number(value, digits=2) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return f"{value:,}" if isinstance(value, int) else f"{value:,.{digits}f}"


def _thirds(medians) -> str | None:
    return None if medians is None else " / ".join(f"{median:,.0f}" for median in medians)


ROWS = [
    ("events", lambda m: m["events"]),
    ("released", lambda m: m.get("released")),
    ("arrived at barrier", lambda m: m.get("arrived_at_barrier")),
    ("tombstones", lambda m: m.get("tombstones")),
    ("replay ratio", lambda m: m.get("replay_ratio")),
    ("late (dropped + adjusted)", lambda m: m.get("late_dropped", 0) + m.get("late_adjusted", 0)),
    ("peak buffered items", lambda m: m.get("peak_buffered")),
    ("events/s", lambda m: m.get("events_per_s")),
    ("wall time (s)", lambda m: m.get("wall_s")),
    ("micro-batches", lambda m: m["engine"].get("batches")),
    ("first micro-batch (s)", lambda m: m["engine"].get("first_batch_s")),
    ("events/s after the first micro-batch",
     lambda m: (m["engine"].get("after_first_batch") or {}).get("events_per_s")),
    ("micro-batch p50 (ms)", lambda m: m["engine"].get("batch_duration_ms", {}).get("p50")),
    ("micro-batch p50, first / middle / last third (ms)",
     lambda m: _thirds(m["engine"].get("batch_duration_thirds_ms"))),
    ("release delay, mean (micro-batches)", lambda m: m["engine"].get("release_delay_batches", {}).get("mean")),
] + [(f"latency p{p} (ms)", lambda m, p=p: m["latency_ms"].get(f"p{p}")) for p in PERCENTILES]


def markdown(report: dict) -> str:
    facts = report["input"]
    lines = [
        f"# FlameSpark bench: `{report['pipeline']}`",
        "",
        f"Engine `{report['engine']}`, reorder latency {report['reorder_latency']} ms, late policy "
        f"`{report['late_policy']}`, rate {report['rate'] or 'unpaced'}; {facts['events']:,} events "
        f"({facts['late']} late). Machine: {report['machine']['cores']} cores, Python {report['machine']['python']}, "
        f"{report['machine']['platform']}.",
        "",
        "| | optimistic | buffered |",
        "|---|---:|---:|",
    ]
    for label, get in ROWS:
        lines.append(f"| {label} | {_number(get(report['optimistic']))} | {_number(get(report['buffered']))} |")
    if report.get("warm_up_events"):
        lines += ["", f"Before the measured runs, both modes ran unpaced on the first {report['warm_up_events']} "
                      f"events of each source, {WARM_UP_BATCH_ROWS} a micro-batch (results discarded), so that "
                      "neither is charged with warming up the JVM."]
    lines += ["", f"Outputs equal: **{_equality(report)}**. Latency plot: `latency.png`.", ""]
    lines += _three_latencies(report)
    lines += _release_delays(report)
    lines += _batch_time(report)
    if "sweep" in report:
        lines += [
            "## Disorder sweep",
            "",
            "| disorder % | inversions | late | replay ratio | p50 opt / buf (ms) | p99 opt / buf (ms) "
            "| events/s opt / buf | equal |",
            "|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for point in report["sweep"]:
            opt, buf = point["optimistic"], point["buffered"]
            inversions = sum(s["inversions"] for s in point["input"]["sources"].values())

            def pair(key):
                return " / ".join(_number(m["latency_ms"][key], 1) for m in (opt, buf))

            lines.append(
                f"| {point['percent']:g} | {inversions:,} | {point['input']['late']} | {_number(opt['replay_ratio'], 3)} "
                f"| {pair('p50')} | {pair('p99')} | {_number(opt['events_per_s'], 1)} / {_number(buf['events_per_s'], 1)} "
                f"| {_equality(point)} |"
            )
        lines += ["", f"Delays |N(0, {report['sweep'][0]['stddev_ms']:g} ms)|, seed {report['sweep'][0]['seed']}. "
                      "Plot: `sweep.png`.", ""]
    if "rates" in report:
        lines += _rates(report)
    if "scaling" in report:
        lines += scaling_markdown(report["scaling"])
    return "\n".join(lines)


def _three_latencies(report: dict) -> list:
    """The speculative, optimistic final and buffered final latency, and the share of early results retracted."""
    lines = [
        "Three latencies from the completing event's arrival (ms):",
        "",
        "| | " + " | ".join(f"p{p}" for p in PERCENTILES) + " |",
        "|---|" + "---:|" * len(PERCENTILES),
    ]
    for kind, _, label in LATENCIES:
        values = report["latencies_ms"][kind]
        lines.append(f"| {label} | " + " | ".join(_number(values[f"p{p}"], 1) for p in PERCENTILES) + " |")
    return lines + ["", f"Early results (`+` in the changelog) later retracted: {report['retracted_share']:.1%}.", ""]


def _equality(point: dict) -> str:
    if point["outputs_equal"]:
        return "yes"
    return "NO" if point["late_equal"] else "not compared: the modes took different events as late"


def _rates(report: dict) -> list:
    """The rate sweep: latency, throughput, replay and batch length per offered rate and mode."""
    lines = [
        "## Latency against offered rate",
        "",
        "| offered (events/s) | mode | events/s | processed events/s | sustained | replay ratio | p50 | p75 | p95 "
        "| p99 (ms) | batch p50 (s) | outputs equal |",
        "|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for point in report["rates"]:
        for mode in MODES:
            metrics, latency = point[mode], point[mode]["latency_ms"]
            lines.append(
                f"| {point['rate']:g} | {mode} | {_number(metrics['events_per_s'], 1)} | "
                f"{_number(processed_per_s(metrics), 1)} | "
                f"{'yes' if metrics['sustained'] else 'no'} | {_number(metrics['replay_ratio'], 3)} | "
                + " | ".join(_number(latency[f"p{p}"], 0) for p in PERCENTILES)
                + f" | {_number(metrics['batch_s'], 2)} | {_equality(point)} |"
            )
    highest = report["highest_sustained"]
    lines += ["", "Highest rate sustained (processed events/s at least 95 % of the offered rate; on Spark, "
                  "counted from the second micro-batch, as the first starts the query): "
                  + ", ".join(f"{mode} {_number(highest[mode], 1)}" for mode in MODES) + ". Plot: `rates.png`.", ""]
    return lines


def _release_delays(report: dict) -> list:
    """A table of how many outputs each mode released 0, 1, 2, ... micro-batches after their event arrived."""
    histograms = {mode: report[mode]["engine"].get("release_delay_batches", {}).get("histogram") for mode in MODES}
    if not all(histograms.values()):
        return []
    delays = sorted({int(delay) for histogram in histograms.values() for delay in histogram})
    lines = [
        "Micro-batches from an event's arrival to its output's release:",
        "",
        "| | " + " | ".join(map(str, delays)) + " |",
        "|---|" + "---:|" * len(delays),
    ]
    for mode, histogram in histograms.items():
        counts = {int(delay): count for delay, count in histogram.items()}
        lines.append(f"| {mode} | " + " | ".join(_number(counts.get(delay)) for delay in delays) + " |")
    return lines + [""]


def _batch_time(report: dict) -> list:
    """Where a Spark micro-batch's time goes, in the run on the input and in each run of the rate sweep."""
    runs = [("the input", report)] + [(f"{point['rate']:g} events/s", point) for point in report.get("rates", [])]
    return batch_time_markdown([(label, {mode: entry[mode]["engine"].get("batch_time") for mode in MODES})
                                for label, entry in runs])


def batch_time_markdown(runs: list) -> list:
    """A table of each run's batch time per mode and stage, and its driver's phases: `runs` is a list of `(label,
    {mode: batch_time})` (`batch_time.batch_time`'s dict, None where the engine reports none, as the local
    engine's); runs without one for every mode are left out.

    >>> timing = {"batches": 4, "driver_ms": {"addBatch": 800}, "stages": [
    ...     {"stage": "1: count", "rows_ms": 300, "handler_ms": 250.4, "state_ms": 120, "commit_ms": 9,
    ...      "rows_updated": 70}]}
    >>> lines = batch_time_markdown([("10 events/s", {"optimistic": timing}), ("local", {"optimistic": None})])
    >>> print("\\n".join(lines[7:]))
    | 10 events/s | optimistic | 1: count | 300 | 250 | 120 | 9 | 70 |
    <BLANKLINE>
    - 10 events/s, optimistic, driver (medians over 4 batches): addBatch 800.
    <BLANKLINE>
    """
    runs = [(label, timings) for label, timings in runs if all(timings.values())]
    if not runs:
        return []
    lines = [
        "Where a micro-batch's time goes (Spark's progress reports and our handlers' own; medians over the batches",
        "after the first, or the first where a run has one, in ms; a stage's time is summed over its tasks, which run",
        "in parallel). Time on rows is PySpark's runner and our handlers; a handler's time includes its calls to the",
        "state store:",
        "",
        "| run | mode | stage | on rows | in our handlers | of which state calls | committing state "
        "| rows updated |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for label, timings in runs:
        for mode, timing in timings.items():
            for stage in timing["stages"]:
                lines.append(f"| {label} | {mode} | {stage['stage']} | {_number(stage['rows_ms'], 0)} | "
                             f"{_number(stage.get('handler_ms'), 0)} | {_number(stage.get('state_ms'), 0)} | "
                             f"{_number(stage['commit_ms'], 0)} | {_number(stage['rows_updated'], 0)} |")
    lines.append("")
    for label, timings in runs:
        for mode, timing in timings.items():
            phases = ", ".join(f"{phase} {_number(ms, 0)}" for phase, ms in timing["driver_ms"].items())
            over = "one batch" if timing["batches"] == 1 else f"medians over {timing['batches']} batches"
            lines.append(f"- {label}, {mode}, driver ({over}): {phases}.")
    return lines + [""]


# ------------------------------------------------------------------ plots


def _figure(columns: int):
    from matplotlib.figure import Figure

    return Figure(figsize=(6.4 * columns, 4.4), layout="constrained")


COLORS = ("C0", "C1")  # per mode, in the order of MODES


def _label(axes, xlabel: str, ylabel: str, title: str):
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend()


def _plot_latencies(axes, xs: list, points: list):
    """p50 (solid) and p99 (dashed) output latency of both modes at `points`, placed at `xs`."""
    for mode, color in zip(MODES, COLORS):
        for key, style in (("p50", "-"), ("p99", "--")):
            values = [point[mode]["latency_ms"][key] for point in points]
            axes.plot(xs, [np.nan if v is None else v for v in values], style, color=color, marker="o",
                      label=f"{mode} {key}")


def plot_latency(latencies: dict, path: Path):
    """The whole distribution (CDF, log time axis) of each of the three latencies."""
    figure = _figure(1)
    axes = figure.add_subplot()
    for _, source, label in LATENCIES:
        x = np.sort(np.asarray(latencies[source], dtype=float))
        if x.size:
            axes.step(np.maximum(x, 1e-3), np.arange(1, x.size + 1) / x.size, where="post", label=label)
    axes.set_xscale("log")
    _label(axes, "latency from the completing event's arrival (ms, log scale)", "share of final outputs",
           "Per-output latency: early result and final release")
    figure.savefig(path, dpi=110)


def plot_rates(points: list, path: Path):
    """Output latency p50 and p99 of both modes against the offered rate (the paper's Figure 10)."""
    figure = _figure(1)
    axes = figure.add_subplot()
    _plot_latencies(axes, [point["rate"] for point in points], points)
    _label(axes, "offered rate (events/s)", "output latency (ms)", "Latency against offered rate")
    figure.savefig(path, dpi=110)


def plot_sweep(points: list, path: Path):
    """Replay ratio and p50/p99 latency of both modes against the disorder percent."""
    figure = _figure(2)
    replay, latency = figure.subplots(1, 2)
    percents = [point["percent"] for point in points]
    for mode, color in zip(MODES, COLORS):
        replay.plot(percents, [point[mode]["replay_ratio"] for point in points], color=color, marker="o", label=mode)
    _plot_latencies(latency, percents, points)
    replay.set_title("Replay ratio (arrived at barrier / released)")
    latency.set_title("Output latency")
    latency.set_ylabel("ms")
    for axes in (replay, latency):
        axes.set_xlabel("disordered events (%)")
        axes.grid(alpha=0.3)
        axes.legend()
    figure.savefig(path, dpi=110)
