"""A bench report's plots: latency.png (the three latencies' distributions), rates.png and sweep.png (both
modes against the offered rate and the disorder percent), batches.png (a Spark run's micro-batches as they
came). Matplotlib is imported only to draw: it is an extra, `pip install 'flamespark[bench]'`, which running
pipelines does not need."""
from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np

from flamespark.core.errors import FlameSparkError
from flamespark.runtime.options import MODES
from flamespark.tools.bench_report import LATENCIES


def check_matplotlib():
    """Raise a FlameSparkError saying how to install matplotlib if it is missing: `flamespark bench` calls this
    before its first run, rather than fail after them all at its first plot."""
    try:
        found = importlib.util.find_spec("matplotlib") is not None
    except ValueError:  # a module set to None in sys.modules: as good as missing
        found = False
    if not found:
        raise FlameSparkError("bench draws its plots with matplotlib, which is not installed: "
                              "pip install 'flamespark[bench]'")


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


def _plain(value: float, _position=None) -> str:
    """A tick label as a plain number, thousands separated.

    >>> [_plain(value) for value in (0.005, 2.0, 500.0, 20000.0)]
    ['0.005', '2', '500', '20,000']
    """
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


def log_marks(low: float, high: float) -> tuple:
    """Where a log axis over `low`..`high` (both > 0) has its labels, and its limits: 1, 2 and 5 times the
    powers of ten (only the powers, over more than three decades), the axis reaching from the mark at or below
    `low` to the one at or above `high`, so that at least those two are labelled.

    >>> log_marks(300, 4000)
    ((1.0, 2.0, 5.0), 200.0, 5000.0)
    >>> log_marks(1, 100_000)
    ((1.0,), 1.0, 100000.0)
    >>> log_marks(1000, 1000)
    ((1.0, 2.0, 5.0), 1000.0, 2000.0)
    """
    steps = (1.0, 2.0, 5.0) if high <= 1000 * low else (1.0,)
    marks = [step * 10.0 ** power for power in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 2)
             for step in steps]
    lower = max(mark for mark in marks if mark <= low)
    upper = min(mark for mark in marks if mark >= high and mark > lower)
    return steps, lower, upper


def _readable_log_x(axes, low: float, high: float):
    """A log x axis labelled with plain numbers at `log_marks`, its other ticks unlabelled: matplotlib's own
    labels of an axis spanning a decade or two are its minor ticks too, as 3×10², 4×10², ..., side by side."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    steps, lower, upper = log_marks(low, high)
    axes.set_xscale("log")
    axes.set_xlim(lower, upper)
    axes.xaxis.set_major_locator(LogLocator(base=10, subs=steps))
    axes.xaxis.set_major_formatter(FuncFormatter(_plain))
    axes.xaxis.set_minor_formatter(NullFormatter())


def plot_latency(latencies: dict, path: Path):
    """The whole distribution (CDF, log time axis) of each of the three latencies, drawn to `path`; returns the
    figure."""
    figure = _figure(1)
    axes = figure.add_subplot()
    shown = []
    for _, source, label in LATENCIES:
        x = np.maximum(np.sort(np.asarray(latencies[source], dtype=float)), 1e-3)
        if x.size:
            axes.step(x, np.arange(1, x.size + 1) / x.size, where="post", label=label)
            shown += [x[0], x[-1]]
    if shown:
        _readable_log_x(axes, min(shown), max(shown))
    _label(axes, "latency from the completing event's arrival (ms, log scale)", "share of final outputs",
           "Per-output latency: early result and final release")
    figure.savefig(path, dpi=110)
    return figure


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


def plot_batches(runs: list, path: Path):
    """Each Spark run's micro-batches over its course, both modes: how long each took, and how many events it
    read, against when it started. `runs` are `(title, entry)` pairs, an entry holding each mode's metrics;
    one row of plots per run. Where the input comes faster than the batches go, they grow and read more."""
    figure = _figure(2)
    figure.set_figheight(3.4 * len(runs))
    for row, (title, entry) in zip(figure.subplots(len(runs), 2, squeeze=False), runs):
        durations, events = row
        for mode, color in zip(MODES, COLORS):
            batches = entry[mode]["engine"]["timeline"]
            starts = [batch["start_s"] for batch in batches]
            seconds = [np.nan if batch["duration_ms"] is None else batch["duration_ms"] / 1000 for batch in batches]
            durations.plot(starts, seconds, color=color, marker=".", label=mode)
            events.plot(starts, [batch["events"] for batch in batches], color=color, marker=".", label=mode)
        _label(durations, "batch start (s after the first)", "duration (s)", f"Micro-batches, {title}")
        _label(events, "batch start (s after the first)", "events read", f"Events a micro-batch read, {title}")
    figure.savefig(path, dpi=110)
