"""The core benchmark: the local engine's per-item cost, against plain Python and under load.

On one document file (the input of an inverted index: benchmarks/inverted_index_tuned.py by default), in one run:

- in order: the local engine against the pipeline's plain in-order Python
  program (`in_order_index`), `repeat` alternating pairs of runs, and the
  ratio of their median wall times (with each pair's ratio beside it), and
  of their median CPU times;
- paced at `rate` documents/s with 30 % of the documents delayed by
  |N(0, 1000 ms)| and by |N(0, 100 ms)|, and the first of these paced far
  above what the engine sustains (`overload_rate`): both modes in `repeat`
  alternating pairs of runs, each mode's run with the median documents/s
  (replay ratio, latency percentiles, documents/s), and the optimistic
  mode's documents/s over the buffered mode's pair by pair;
- the running-sum example in order, in events/s, the median of `repeat` runs;
- the changelog: the first disorder unpaced, optimistic, without and with
  `changes` in alternating runs (its cost, as a ratio of median wall times,
  with the ratio of each pair of runs beside it to show the noise),
  and paced at `changelog_rate` with it, `repeat` times (the speculative
  latency of the run with the median p50, the lower middle one of an even
  count, against the final one; every run's p50 beside it).

Every measured run happens in a fresh process, so its peak memory is its own,
with the engine imported before its clock starts. Beside its wall time, a
run's CPU time (user and system, of its process while it ran) is kept: on a
shared machine, time that other work takes the cores away counts in the wall
time and not in the CPU time, so ratios of CPU times move less from run to run.
"""
from __future__ import annotations

import concurrent.futures
import hashlib
import importlib
import multiprocessing
import resource
import statistics
import time
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path

from flamespark.api import run
from flamespark.core.codec import pack
from flamespark.core.errors import InputError
from flamespark.io.inputs import read_input
from flamespark.runtime.options import MODES
from flamespark.tools.disorder import disorder_pairs
from flamespark.tools.loader import load_module


@dataclass(frozen=True)
class Disorder:
    """`percent` % of the events delayed by |N(0, stddev_ms)| (σ = stddev_ms), drawn with `seed`."""

    percent: float
    stddev_ms: float
    seed: int = 1

    @property
    def label(self) -> str:
        return f"{self.percent:g} % delayed, σ {self.stddev_ms:g} ms"


def _digest(outputs: dict) -> str:
    digest = hashlib.sha256()
    for sink in sorted(outputs):
        digest.update(sink.encode())
        for payload in outputs[sink]:
            digest.update(pack(payload))
    return digest.hexdigest()


def _peak_mb() -> float:
    """The process's peak resident memory so far: taken just before a run starts, it is what the interpreter,
    the libraries and the input hold (the run's own peak can only be higher)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class _Clock:
    """A run's wall and CPU time (seconds), from its start to `read()`."""

    def __init__(self):
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def read(self) -> dict:
        return {"wall_s": time.perf_counter() - self._wall, "cpu_s": time.process_time() - self._cpu}


def _load_engine():
    """Import the local engine now. `run` imports it on its first call, and every measured run is the first in
    its process: the import (17 ms here) would count in the run's wall time, where plain Python's counts none."""
    importlib.import_module("flamespark.engines.local")


def _documents(docs_path: Path) -> list:
    return sorted(read_input("docs", docs_path), key=lambda event: event[0])


def _arrival(events: list, disorder: Disorder | None) -> list:
    if disorder is None:
        return events
    return disorder_pairs(events, disorder.percent, disorder.stddev_ms, disorder.seed)


def _run_index(pipeline: Path, docs_path: Path, mode: str, reorder_latency: int, disorder, rate,
               changes: bool = False) -> dict:
    """One engine run of the inverted index; runs in a child process."""
    module = load_module(pipeline)
    arrival = _arrival(_documents(docs_path), disorder)
    _load_engine()
    before_mb = _peak_mb()
    clock = _Clock()
    result = run(module.graph, {"docs": arrival}, mode=mode, reorder_latency=reorder_latency, rate=rate,
                 changes=changes, progress=False)
    times = clock.read()
    metrics = result.metrics
    return {
        "changes": metrics["changes"],
        **times,
        "documents": len(arrival),
        "documents_per_s": len(arrival) / times["wall_s"],
        "released": metrics["released"],
        "replay_ratio": metrics["replay_ratio"],
        "late": metrics["late_dropped"] + metrics["late_adjusted"],
        "latency_ms": {p: metrics["latency_ms"][p] for p in ("p50", "p75", "p95", "p99")},
        "peak_mb": _peak_mb(),
        "before_run_mb": before_mb,
        "outputs": _digest(result.outputs),
    }


def _run_plain(pipeline: Path, docs_path: Path) -> dict:
    """The pipeline's plain in-order program on the same documents; runs in a child process."""
    module = load_module(pipeline)
    docs = [payload for _, payload in _documents(docs_path)]
    before_mb = _peak_mb()
    clock = _Clock()
    outputs = module.in_order_index(docs)
    return {**clock.read(), "peak_mb": _peak_mb(), "before_run_mb": before_mb, "outputs": _digest(outputs)}


def _run_sum(pipeline: Path, readings: int) -> dict:
    """The running-sum example over in-order readings; runs in a child process."""
    module = load_module(pipeline)
    events = [(reading["ts"], reading) for reading in module.readings(readings)]
    _load_engine()
    clock = _Clock()
    result = run(module.graph, {"readings": events}, progress=False)
    times = clock.read()
    return {**times, "events_per_s": readings / times["wall_s"], "released": result.metrics["released"],
            "peak_mb": _peak_mb()}


def _in_child(function, *args) -> dict:
    """`function(*args)` in a fresh process, so that its peak memory is its own."""
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(function, *args).result()


def bench_core(docs: Path, *, index_pipeline: Path, sum_pipeline: Path, reorder_latency: int = 3000,
               rate: float = 20.0, overload_rate: float = 200.0, readings: int = 100_000,
               disorders: tuple = (Disorder(30, 1000), Disorder(30, 100)), repeat: int = 3,
               changelog_rate: float = 10.0, say=None) -> dict:
    """Run every measurement of the core benchmark and return the report (see the module docstring)."""
    _check(docs, index_pipeline, sum_pipeline)
    say = say or (lambda text: None)
    in_order = _in_order(index_pipeline, docs, reorder_latency, repeat, say)
    report = {
        "documents": in_order["engine"]["documents"],
        "reorder_latency_ms": reorder_latency,
        "in_order": in_order,
        "paced": [],
    }
    runs = [(disorder, rate) for disorder in disorders] + [(disorders[0], overload_rate)]
    for disorder, offered in runs:
        report["paced"].append(_paced(index_pipeline, docs, reorder_latency, disorder, offered, repeat, say))
    sums = []
    for index in range(repeat):
        say(f"running sum, {readings:,} readings in order ({index + 1}/{repeat}) ...")
        sums.append(_in_child(_run_sum, sum_pipeline, readings))
    report["running_sum"] = {**_median_run(sums, _EVENTS_PER_S), "runs_events_per_s": _values(sums, "events_per_s")}
    report["changelog"] = _changelog(index_pipeline, docs, reorder_latency, disorders[0], changelog_rate, repeat, say)
    return report


def _check(docs: Path, index_pipeline: Path, sum_pipeline: Path):
    """Fail before the first run, naming what is wrong: the documents (read whole, as every run reads them), what
    each example must offer the bench, and each document as the index example's plain program takes it."""
    documents = _documents(docs)
    modules = {}
    for path, names in ((index_pipeline, ("graph", "in_order_index")), (sum_pipeline, ("graph", "readings"))):
        modules[path] = load_module(path)
        missing = [name for name in names if not hasattr(modules[path], name)]
        if missing:
            raise InputError(f"{path} has no {' or '.join(missing)}, which benchmarks/core.py needs of it")
    in_order_index = modules[index_pipeline].in_order_index
    for ts, document in documents:
        try:
            in_order_index([document])
        except Exception as exc:
            raise InputError(f"{docs}: the document of ts {ts} is not one {index_pipeline.name} takes "
                             f"({type(exc).__name__}: {exc}); the benchmark's documents are its pipeline's, as "
                             f"python -m flamespark.tools.wikipedia writes them") from None


def _in_order(pipeline, docs, reorder_latency, repeat, say) -> dict:
    """The local engine in order against the plain program, in `repeat` alternating pairs of runs: the run of
    each with the median wall time, their ratio, and each pair's ratio (a single pair moves by several per cent
    from run to run); the same of CPU times."""
    plains, engines = [], []
    for index in range(repeat):
        say(f"in order: plain Python ({index + 1}/{repeat}) ...")
        plains.append(_in_child(_run_plain, pipeline, docs))
        say(f"in order: local engine ({index + 1}/{repeat}) ...")
        engines.append(_in_child(_run_index, pipeline, docs, "optimistic", reorder_latency, None, None))
    plain, engine = _median_run(plains, _WALL), _median_run(engines, _WALL)
    return {"engine": engine, "plain": plain, "ratio": engine["wall_s"] / plain["wall_s"],
            "pair_ratios": _ratios(plains, engines, "wall_s"),
            "cpu_ratio": _median_ratio(plains, engines, "cpu_s"),
            "cpu_pair_ratios": _ratios(plains, engines, "cpu_s"),
            "outputs_equal": len({run["outputs"] for run in plains + engines}) == 1}


def _paced(pipeline, docs, reorder_latency, disorder, rate, repeat, say) -> dict:
    """Both modes paced at `rate`, in `repeat` alternating pairs of runs: each mode's run with the median
    documents/s, and the optimistic mode's documents/s over the buffered mode's in each pair (whether it keeps
    ahead under load is a comparison that one pair, on a shared machine, can get either way)."""
    runs = {mode: [] for mode in MODES}
    for index in range(repeat):
        for mode in MODES:
            say(f"{disorder.label}, {rate:g} docs/s: {mode} ({index + 1}/{repeat}) ...")
            runs[mode].append(_in_child(_run_index, pipeline, docs, mode, reorder_latency, disorder, rate))
    return {"disorder": disorder.label, "rate": rate,
            **{mode: _median_run(runs[mode], _DOCUMENTS_PER_S) for mode in MODES},
            "pair_ratios": _ratios(runs["buffered"], runs["optimistic"], "documents_per_s"),
            "outputs_equal": len({run["outputs"] for mode in MODES for run in runs[mode]}) == 1}


_WALL = itemgetter("wall_s")
_DOCUMENTS_PER_S = itemgetter("documents_per_s")
_EVENTS_PER_S = itemgetter("events_per_s")


def _values(runs: list, field: str) -> list:
    return [run[field] for run in runs]


def _median_ratio(yardsticks: list, runs: list, field: str) -> float:
    """The median of the runs' `field` over the median of their yardsticks'."""
    return statistics.median(_values(runs, field)) / statistics.median(_values(yardsticks, field))


def _ratios(yardsticks: list, runs: list, field: str) -> list:
    """Each run's `field` over its yardstick's, pair by pair."""
    return [run[field] / yardstick[field] for yardstick, run in zip(yardsticks, runs)]


def _median_run(runs: list, value) -> dict:
    """The run with the median `value(run)`, the lower middle one of an even count."""
    values = [value(run) for run in runs]
    return runs[values.index(statistics.median_low(values))]


def _changelog(pipeline, docs, reorder_latency, disorder, rate, repeat, say) -> dict:
    """What the changelog costs unpaced (alternating runs without and with it), and its latency paced: `repeat`
    paced runs, as where a step falls between arrivals moves a run's speculative p50 by a quarter or more."""
    unpaced = {False: [], True: []}
    for index in range(repeat):
        for changes in (False, True):
            say(f"changelog {'on' if changes else 'off'}, {disorder.label}, unpaced ({index + 1}/{repeat}) ...")
            unpaced[changes].append(
                _in_child(_run_index, pipeline, docs, "optimistic", reorder_latency, disorder, None, changes))
    paced = []
    for index in range(repeat):
        say(f"changelog on, {disorder.label}, {rate:g} docs/s ({index + 1}/{repeat}) ...")
        paced.append(_in_child(_run_index, pipeline, docs, "optimistic", reorder_latency, disorder, rate, True))
    speculative = [run["changes"]["speculative_latency_ms"]["p50"] for run in paced]
    off, on = unpaced[False], unpaced[True]
    return {"disorder": disorder.label, "wall_s": {"off": _values(off, "wall_s"), "on": _values(on, "wall_s")},
            "cost_ratio": _median_ratio(off, on, "wall_s"), "pair_ratios": _ratios(off, on, "wall_s"),
            "cpu_cost_ratio": _median_ratio(off, on, "cpu_s"),
            "cpu_pair_ratios": _ratios(off, on, "cpu_s"),
            "outputs_equal": len({run["outputs"] for run in off + on}) == 1, "rate": rate,
            "speculative_p50_ms": speculative,
            "paced": _median_run(paced, lambda run: run["changes"]["speculative_latency_ms"]["p50"])}


def _number(value, digits=1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _listed(ratios: list, digits: int) -> str:
    return ", ".join(f"{ratio:.{digits}f}x" for ratio in ratios)


def table(report: dict) -> str:
    """The report as Markdown tables."""
    in_order = report["in_order"]
    engine, plain = in_order["engine"], in_order["plain"]
    lines = [
        f"Inverted index, {report['documents']} documents, reorder latency {report['reorder_latency_ms']} ms.",
        "",
        "| in order | wall (s) | CPU (s) | peak memory (MB) | of which before the run |",
        "|---|---:|---:|---:|---:|",
        *(f"| {name} | {run['wall_s']:.2f} | {run['cpu_s']:.2f} | {run['peak_mb']:.0f} | {run['before_run_mb']:.0f} |"
          for name, run in (("local engine", engine), ("plain Python", plain))),
        f"| **ratio** | **{in_order['ratio']:.2f}x** | {in_order['cpu_ratio']:.2f}x | | |",
        "",
        f"In order: the runs with the median wall time of {len(in_order['pair_ratios'])} alternating pairs "
        f"(their CPU times as measured; the CPU ratio is of the median CPU times); pair by pair "
        f"{_listed(in_order['pair_ratios'], 2)} in wall time, {_listed(in_order['cpu_pair_ratios'], 2)} in CPU time.",
        "",
        "| input | docs/s offered | mode | docs/s | replay ratio | p50 | p95 | p99 (ms) | peak MB |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for entry in report["paced"]:
        for mode in MODES:
            run = entry[mode]
            latency = run["latency_ms"]
            lines.append(
                f"| {entry['disorder']} | {entry['rate']:g} | {mode} | {run['documents_per_s']:.1f} | "
                f"{run['replay_ratio']:.3f} | {_number(latency['p50'], 0)} | {_number(latency['p95'], 0)} | "
                f"{_number(latency['p99'], 0)} | {run['peak_mb']:.0f} |"
            )
    pairs = len(report["paced"][0]["pair_ratios"])
    lines += ["", f"Each row is the mode's run with the median docs/s of {pairs} alternating pairs; the optimistic "
                  f"mode's docs/s over the buffered mode's, pair by pair: "
                  + "; ".join(f"{entry['disorder']}, {entry['rate']:g} docs/s: {_listed(entry['pair_ratios'], 2)}"
                              for entry in report["paced"]) + "."]
    before = sorted({round(entry[mode]["before_run_mb"]) for entry in report["paced"] for mode in MODES})
    held = f"{before[0]}" if len(before) == 1 else f"{before[0]}–{before[-1]}"
    lines += ["", f"Peak memory is the whole process's: before its run started, each paced run's process held "
                  f"{held} MB (the interpreter, the libraries and the input)."]
    running_sum = report["running_sum"]
    lines += ["", f"Running sum in order: {running_sum['events_per_s']:,.0f} events/s, the median of "
                  f"{len(running_sum['runs_events_per_s'])} runs "
                  f"({', '.join(f'{rate:,.0f}' for rate in running_sum['runs_events_per_s'])}; "
                  f"{running_sum['released']:,} outputs, peak {running_sum['peak_mb']:.0f} MB)."]
    changelog = report["changelog"]
    paced = changelog["paced"]
    lines += [
        "",
        f"Changelog ({changelog['disorder']}): unpaced optimistic wall, median of {len(changelog['wall_s']['on'])}, "
        f"{statistics.median(changelog['wall_s']['off']):.2f} s without, "
        f"{statistics.median(changelog['wall_s']['on']):.2f} s with: **{changelog['cost_ratio']:.3f}x** "
        f"({min(changelog['pair_ratios']):.3f}x to {max(changelog['pair_ratios']):.3f}x pair by pair); in CPU time "
        f"{changelog['cpu_cost_ratio']:.3f}x (pairs {_listed(changelog['cpu_pair_ratios'], 3)}). "
        f"Paced at {changelog['rate']:g} docs/s, the median of {len(changelog['speculative_p50_ms'])} runs "
        f"({', '.join(_number(p50) for p50 in changelog['speculative_p50_ms'])} ms): speculative latency p50 "
        f"{_number(paced['changes']['speculative_latency_ms']['p50'])} ms "
        f"(p99 {_number(paced['changes']['speculative_latency_ms']['p99'])}) against final p50 "
        f"{_number(paced['latency_ms']['p50'])} ms; {paced['changes']['retracted_share']:.1%} of early results "
        f"retracted.",
    ]
    unequal = [entry["disorder"] for entry in report["paced"] if not entry["outputs_equal"]]
    if not changelog["outputs_equal"]:
        unequal.append("changelog off and on")
    if not in_order["outputs_equal"]:
        unequal.append("in order: engine and plain Python")
    lines.append("Outputs equal in every pair." if not unequal else f"OUTPUTS DIFFER: {', '.join(unequal)}")
    return "\n".join(lines) + "\n"
