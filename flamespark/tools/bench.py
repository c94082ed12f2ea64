"""The optimistic mode against the buffered baseline on the same input (`flamespark bench`).

`bench` writes OUT/report.json, OUT/report.md (`bench_report`) and
OUT/latency.png (`bench_plots`), and on Spark OUT/batches.png (each run's
micro-batches); with a `sweep` of disorder percents it
also reruns both modes on inputs re-disordered at each percent (from the
input sorted by ts) and writes OUT/sweep.png; with `scaling` masters, it
reports the same unpaced Spark run on each (`flamespark.tools.scaling`).
"""
from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from flamespark.api import run
from flamespark.core.codec import pack
from flamespark.core.errors import OptionError
from flamespark.graph import Graph
from flamespark.io.inputs import read_input
from flamespark.io.atomic import write_atomic
from flamespark.runtime.metrics import percentiles
from flamespark.runtime.options import MODES, RunOptions
from flamespark.tools.bench_plots import check_matplotlib, plot_batches, plot_latency, plot_rates, plot_sweep
from flamespark.tools.bench_report import LATENCIES, markdown, number
from flamespark.tools.disorder import count_inversions, count_runs, disorder_pairs
from flamespark.tools.machine import machine
from flamespark.tools.pace import pace_warning
from flamespark.tools.runner import check_inputs, checkpoint_directory, spark_options_given
from flamespark.tools.scaling import scaling_runs


def _progress(text: str):
    print(f"bench: {text}", file=sys.stderr, flush=True)


# Events per source of the Spark warm-up runs (`Runs.warm_up`) unless told otherwise, and how many a micro-batch.
WARM_UP_EVENTS = 200
WARM_UP_BATCH_ROWS = 3
# What the report says of the warm-up: the fewest events a source gave it, and its rows a micro-batch.
WARM_UP_FACTS = ("warm_up_events", "warm_up_batch_rows")


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
    batch_size: int | None = None

    def run(self, graph, inputs: dict, mode: str, label: str):
        """One run of `mode` (the optimistic one keeps a changelog); a Spark run keeps its checkpoint under
        `checkpoint/label/mode`."""
        options = dict(mode=mode, reorder_latency=self.reorder_latency, late=self.late, rate=self.rate,
                       changes=mode == "optimistic")
        if self.engine == "local":
            # A paced run's batches are what arrived while it worked: the batch size is for the unpaced ones.
            return run(graph, inputs, batch_size=self.batch_size if self.rate is None else None, **options)
        checkpoint = self.checkpoint / label / mode
        shutil.rmtree(checkpoint, ignore_errors=True)
        return run(graph, inputs, engine="spark", master=self.master, checkpoint=checkpoint,
                   max_rows_per_batch=self.max_rows_per_batch, ingest_partitions=self.ingest_partitions, **options)

    def warm_up(self, graph, events: dict, count: int) -> dict:
        """Run both modes unpaced on the first `count` events of each source, WARM_UP_BATCH_ROWS a
        micro-batch, discarding the results, so that the measured runs share a JVM that has run many batches:
        the first run in a fresh one took twice as long a micro-batch here; one warm-up batch a mode did not
        make up for it, twenty mostly did, and after sixty-nine the JIT compiler had less left to do in the
        measured runs, whose median batch was 25-30 % shorter than after twenty (2026-11-28). Returns the
        report's facts of it: the fewest events a source gave it (0: no warm-up) and the rows a micro-batch
        (None when nothing ran)."""
        first = {name: pairs[:count] for name, pairs in events.items()}
        warmed = min(map(len, first.values()), default=0) if count else 0
        if warmed:
            for mode in MODES:
                _progress(f"warm-up: {mode} ...")
                replace(self, rate=None, max_rows_per_batch=WARM_UP_BATCH_ROWS).run(graph, first, mode, "warm-up")
        return dict(zip(WARM_UP_FACTS, (warmed, WARM_UP_BATCH_ROWS if warmed else None)))

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
            regime = metrics["engine"].get("regime")
            behind = (f", {regime['batches_behind']} of {metrics['engine']['batches']} micro-batches behind "
                      f"their input" if regime else "")
            _progress(f"{mode} mode on {title}: done in {number(metrics.get('wall_s'))} s, "
                      f"replay ratio {number(metrics.get('replay_ratio'), 3)}, "
                      f"p50 {number(metrics['latency_ms']['p50'], 1)} ms{behind}")
            entry[mode] = metrics
            outputs[mode] = result.outputs
            late[mode] = (sorted((letter["source"], letter["ts"], pack(letter["payload"])) for letter in result.late),
                          metrics["late_adjusted"])
        entry["latencies_ms"] = {kind: percentiles(latencies[source]) for kind, source, _ in LATENCIES}
        entry["retracted_share"] = entry["optimistic"]["changes"]["retracted_share"]
        optimistic = entry["optimistic"]
        entry["input"]["late"] = optimistic.get("late_dropped", 0) + optimistic.get("late_adjusted", 0)
        entry["outputs_equal"] = outputs["optimistic"] == outputs["buffered"]
        # On Spark the optimistic mode judges lateness per ingest partition and the baseline in one, so beyond
        # the reorder latency the two may drop different events; their outputs compare only where they dropped
        # the same.
        entry["late_equal"] = late["optimistic"] == late["buffered"]
        return entry, latencies


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


def rate_point(entry: dict, rate: float) -> dict:
    """`entry`, both modes' runs offered `rate` events a second (`Runs.compare`'s, or a paced bench report), as a
    point of a rate sweep: with its rate and, per mode, the events/s it processed, whether that sustained the rate
    and its median micro-batch (s; None off Spark)."""
    entry["rate"] = rate
    for mode in MODES:
        metrics = entry[mode]
        batch_ms = metrics["engine"].get("batch_duration_ms", {}).get("p50")
        metrics["processed_per_s"] = processed_per_s(metrics)
        metrics["sustained"] = (metrics["processed_per_s"] or 0) >= SUSTAINED * rate
        metrics["batch_s"] = batch_ms / 1000 if batch_ms is not None else None
    return entry


def rate_points(graph, events: dict, runs: Runs, rates: Sequence[float], inputs: dict) -> list:
    """Both modes on the same input offered at every rate of `rates` (events/s)."""
    points = []
    for rate in rates:
        entry, _ = replace(runs, rate=rate).compare(graph, events, f"rate_{rate:g}", inputs,
                                                    f"the input at {rate:g} events/s")
        points.append(rate_point(entry, rate))
    return points


def highest_sustained(points: list) -> dict:
    """Per mode, the highest offered rate it sustained (None if none)."""
    return {mode: max((point["rate"] for point in points if point[mode]["sustained"]), default=None)
            for mode in MODES}


def bench(graph: Graph, inputs: Mapping[str, str | Path], out: str | Path, *, engine: str = "spark",
          reorder_latency: int = 0, late: str = "drop", rate: float | None = None, batch_size: int | None = None,
          master: str | None = None, checkpoint: str | Path | None = None, max_rows_per_batch: int | None = None,
          sweep: Sequence[float] = (), stddev_ms: float = 1000.0, seed: int = 0, rates: Sequence[float] = (),
          title: str | None = None, ingest_partitions: int | None = None, scaling: Sequence[str] = (),
          pipeline: str | None = None, warmup_events: int | None = None) -> dict:
    """Run `graph` in both modes over `inputs` (source name to a JSONL file or a directory) and return the report.

    The report is also written to `out` (report.json, report.md, latency.png;
    on Spark, batches.png plots each run's micro-batches).
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
    On Spark, both modes first warm up the JVM on the first `warmup_events`
    events of each source (default WARM_UP_EVENTS; 0 for none).
    The other options are `flamespark.run`'s; `rate` paces the local engine's
    input too. A paced run offers the k-th event of a source k / rate seconds
    after the start, whatever its event time, so its event time keeps up with
    the clock only when the events are 1000 / rate ms apart
    (`flamespark.tools.pace`); for every source and rate at which it runs
    slower, `bench` prints a warning, and the report keeps them
    (`pace_warnings`).
    """
    # flamespark.run's errors, and a missing matplotlib, before any work
    check_matplotlib()
    RunOptions.of(engine, reorder_latency=reorder_latency, late=late, rate=rate, batch_size=batch_size,
                  **spark_options_given(master=master, checkpoint=checkpoint, max_rows_per_batch=max_rows_per_batch,
                                        ingest_partitions=ingest_partitions))
    if warmup_events is not None and (engine != "spark" or warmup_events < 0):
        raise OptionError(f"bench: warmup_events is a count of events (0 or more) for the Spark engine's warm-up; "
                          f"got {warmup_events!r} with engine={engine!r}")
    paths = check_inputs(graph, inputs)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if scaling and pipeline is None:
        raise OptionError("bench: scaling runs load the graph in processes of their own and need its PATH.py:ATTR")
    # Before any run here starts a JVM of its own, which would take memory and cores from them.
    scaled = scaling_runs(pipeline, paths, out / "scaling", scaling, reorder_latency=reorder_latency, late=late,
                          max_rows_per_batch=max_rows_per_batch, ingest_partitions=ingest_partitions) if scaling else None
    runs = Runs(engine, reorder_latency, late, rate, master, checkpoint_directory(out, checkpoint), max_rows_per_batch,
                ingest_partitions, batch_size)
    events = {name: read_input(name, path) for name, path in paths.items()}
    warnings = pace_warnings(events, [rate, *rates], reorder_latency)
    for warning in warnings:
        _progress(f"warning: {warning}")
    warm_up = WARM_UP_EVENTS if warmup_events is None else warmup_events
    # the local engine has no JVM to warm up
    warmed = runs.warm_up(graph, events, warm_up) if engine == "spark" else dict.fromkeys(WARM_UP_FACTS)
    main, latencies = runs.compare(graph, events, "input", events if engine == "local" else paths, "the input")
    report = {
        "pipeline": title or graph.name,
        "engine": engine,
        "reorder_latency": reorder_latency,
        "late_policy": late,
        "rate": rate,
        "machine": machine(),
        "pace_warnings": warnings,
        **warmed,
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
    if engine == "spark":
        pace = "unpaced" if rate is None else f"{rate:g} events/s"
        paced = [(f"{point['rate']:g} events/s", point) for point in report.get("rates", [])]
        plot_batches([(f"the input, {pace}", main), *paced], out / "batches.png")
    write_atomic(out / "report.md", markdown(report))
    write_atomic(out / "report.json", json.dumps(report, indent=2) + "\n")
    return report


def pace_warnings(events: dict, rates: Sequence[float | None], reorder_latency) -> list:
    """A warning (`flamespark.tools.pace.pace_warning`) for each source and offered rate (None: unpaced; the
    sources taken in turn, each at its share) at which the source's event time runs slower than the clock, so that
    its reorder latency waits longer than it says."""
    first_latency = reorder_latency[0] if isinstance(reorder_latency, (tuple, list)) else reorder_latency
    found = (pace_warning(name, [ts for ts, _ in pairs], rate, first_latency, len(events))
             for rate in dict.fromkeys(rates) if rate is not None for name, pairs in events.items())
    return [warning for warning in found if warning is not None]


def modes_agree(report: dict) -> bool:
    """Whether both modes released the same outputs on the input and at every sweep and rate point at which
    they took the same events as late (exactness promises nothing more)."""
    points = [report] + report.get("sweep", []) + report.get("rates", [])
    return all(point["outputs_equal"] or not point["late_equal"] for point in points)
