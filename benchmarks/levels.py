"""Several reorder latencies against one each: the Impatience paper's Table II, on either engine.

    python benchmarks/levels.py                       # 75 s of events, six paced runs
    python benchmarks/levels.py --seconds 10 --latencies 200,2000 --out levels.json
    python benchmarks/levels.py --engine spark --rate 2000 --out levels-spark.json
    python benchmarks/levels.py --replot levels.json --plot levels.png   # draw a report again

The input: one event a millisecond for `--seconds`, each of one of `--keys`
keys drawn at random, and the query counts each key's events per 1 s
tumbling window. The disorder has a heavy tail: 30 % of the events are
delayed by |N(0, 1 s)| and 2 % by a uniform 5 to 60 s.

Each run is paced at `--rate` events/s (by default one event time second a
second), in a process of its own (on Spark, `local[2]`), in both modes:

- `min latency`: the first latency alone (the paper's MinLatency);
- `max latency`: the last latency alone (MaxLatency);
- `levels`: all of them, released at the first and corrected at the others.

Per run: each level's completeness (the share of the input's events that
its window counts hold: the outputs, with the corrections up to the level),
its latency (p50 and p99, from the arrival of the event that completed a
result to its release: the outputs', then each level's corrections'), the
peak resident memory above what the process held before the run (local
engine: Spark's state lives in its JVM and Python workers), the most items
held at once, and the events applied a second (on Spark, from the second
micro-batch on: whether the run kept up with its rate). The report checks
that the levelled run's outputs equal the first latency's run and, with
all corrections, the last latency's (as multisets).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

if not __package__:  # run as `python benchmarks/levels.py`: this checkout's packages first
    import _checkout  # noqa: F401

from benchmarks.lib.measure import in_child, memory_mb, reset_peak
from benchmarks.lib.script import run_script
from benchmarks.windows_local import SINK, SOURCE, count_graph, events
from flamespark.tools.arguments import DefaultsHelpFormatter, non_negative_int, positive_float, positive_int
from flamespark.tools.arguments import reorder_latencies
from flamespark.core.codec import pack
from flamespark.tools.bench_plots import check_matplotlib
from flamespark.tools.machine import machine

MODES = ("optimistic", "buffered")


def heavy_tailed(pairs: list, seed: int, normal=(30.0, 1000.0), tail=(2.0, 5000, 60000)) -> list:
    """`pairs` in arrival order: `normal[0]` % of them delayed by |N(0, normal[1])| ms and `tail[0]` % by a
    uniform `tail[1]` to `tail[2]` ms, the others in place.

    >>> heavy_tailed([(0, "a"), (1, "b"), (2, "c")], seed=1, normal=(0, 0), tail=(100, 5, 6))
    [(0, 'a'), (1, 'b'), (2, 'c')]
    >>> pairs = [(ts, ts) for ts in range(1000)]
    >>> arrival = heavy_tailed(pairs, seed=1)
    >>> sorted(arrival) == pairs, arrival != pairs
    (True, True)
    """
    rng = np.random.default_rng(seed)
    draw = rng.random(len(pairs)) * 100
    delays = np.where(draw < normal[0], np.abs(rng.normal(0, 1, len(pairs))) * normal[1], 0.0)
    tailed = (draw >= normal[0]) & (draw < normal[0] + tail[0])
    delays = np.where(tailed, rng.uniform(tail[1], tail[2], len(pairs)), delays)
    arrivals = np.asarray([ts for ts, _ in pairs], dtype=float) + delays
    return [pairs[i] for i in np.argsort(arrivals, kind="stable")]


def counted(outputs: list, corrections: list, level: int) -> int:
    """The events the window counts hold: `outputs` with the `corrections` up to `level`.

    >>> counted([{"value": 3}], [{"op": "-", "payload": {"value": 3}, "level": 2},
    ...                          {"op": "+", "payload": {"value": 4}, "level": 2}], 2)
    4
    """
    held = sum(result["value"] for result in outputs)
    for record in corrections:
        if record["level"] <= level:
            held += record["payload"]["value"] * (1 if record["op"] == "+" else -1)
    return held


def replayed(outputs: list, corrections: list) -> Counter:
    """The outputs with every correction, as a multiset of encoded results."""
    live = Counter(map(pack, outputs))
    for record in corrections:
        live[pack(record["payload"])] += 1 if record["op"] == "+" else -1
    return +live


def one_run(seconds: int, keys: int, seed: int, latencies, mode: str, rate: float, engine: str = "local") -> dict:
    """A paced run in this process: make the input (untimed), then run the query over it."""
    import flamespark as fs

    pairs = heavy_tailed(events(seconds * 1000, keys, seed), seed)
    on_spark = {"master": "local[2]"} if engine == "spark" else {}
    reset_peak()
    before_mb = memory_mb("VmRSS")
    started = time.perf_counter()
    result = fs.run(count_graph(1000), {SOURCE: pairs}, engine=engine, mode=mode, reorder_latency=latencies,
                    rate=rate, progress=False, **on_spark)
    wall_s = time.perf_counter() - started
    metrics = result.metrics
    applied_per_s = metrics["events"] / wall_s
    if engine == "spark":
        applied_per_s = metrics["engine"]["after_first_batch"]["events_per_s"]
    levels = metrics["levels"] or [{"reorder_latency": latencies, "latency_ms": metrics["latency_ms"]}]
    outputs, corrections = result.outputs[SINK], result.corrections.get(SINK, [])
    return {
        "latencies_ms": list(latencies) if isinstance(latencies, tuple) else [latencies],
        "levels": [{"reorder_latency_ms": level["reorder_latency"],
                    "completeness": counted(outputs, corrections, number) / len(pairs),
                    "latency_p50_ms": level["latency_ms"]["p50"], "latency_p99_ms": level["latency_ms"]["p99"],
                    "corrections": level.get("corrections", 0)}
                   for number, level in enumerate(levels, 1)],
        "late": len(result.late), "peak_mb": None if on_spark else memory_mb() - before_mb,
        "peak_items": metrics["peak_buffered"], "wall_s": wall_s, "events_per_s": applied_per_s,
        "outputs": [pack(output) for output in outputs], "final": list(replayed(outputs, corrections).elements()),
    }


def bench(seconds: int, keys: int, seed: int, latencies: tuple, rate: float, say=print, engine="local") -> dict:
    """Every run of the module's docstring; the report."""
    runs = {}
    for mode in MODES:
        for name, asked in (("min latency", latencies[0]), ("max latency", latencies[-1]), ("levels", latencies)):
            say(f"levels: {engine}, {mode}, {name} {asked} ms, {seconds} s of events at {rate:g}/s ...")
            runs[f"{mode}: {name}"] = in_child(one_run, seconds, keys, seed, asked, mode, rate, engine)
    equal = {}
    for mode in MODES:
        levelled, first, last = (runs[f"{mode}: {name}"] for name in ("levels", "min latency", "max latency"))
        equal[mode] = {"outputs_equal_min_latency": levelled["outputs"] == first["outputs"],
                       "final_equal_max_latency": Counter(levelled["final"]) == Counter(last["outputs"])}
    for run in runs.values():
        del run["outputs"], run["final"]
    return {"setup": {"seconds": seconds, "events": seconds * 1000, "keys": keys, "window_ms": 1000, "seed": seed,
                      "latencies_ms": list(latencies), "rate": rate, "engine": engine,
                      "disorder": "30 % by |N(0, 1 s)|, 2 % by U(5 s, 60 s)"},
            "machine": machine(), "runs": runs, "equal": equal}


def table(report: dict) -> str:
    """The report as a markdown table: a row per run and level."""
    rows = ["| run | level | completeness | latency p50 | latency p99 | corrections | peak memory | peak items "
            "| events applied/s |", "|---|---|---|---|---|---|---|---|---|"]
    for name, run in report["runs"].items():
        memory = "-" if run["peak_mb"] is None else f"{run['peak_mb']:.0f} MB"
        once = [name, memory, str(run["peak_items"]), f"{run['events_per_s']:,.0f}"]
        for number, level in enumerate(run["levels"], 1):
            run_name, memory, items, speed = once if number == 1 else [""] * 4
            corrections = str(level["corrections"]) if number > 1 else ""
            rows.append(f"| {run_name} | {level['reorder_latency_ms'] / 1000:g} s | "
                        f"{level['completeness'] * 100:.2f} % | {_seconds(level['latency_p50_ms'])} | "
                        f"{_seconds(level['latency_p99_ms'])} | {corrections} | {memory} | {items} | {speed} |")
    return "\n".join(rows)


def _seconds(ms) -> str:
    return "-" if ms is None else f"{ms / 1000:.2f} s"


def plot(report: dict, path: Path):
    """Table II as a figure: each run's levels as points of completeness against latency (p50, and p99 as the
    bar's top), one panel per mode. Matplotlib comes with the `bench` extra."""
    from matplotlib.figure import Figure

    modes = sorted({name.split(":")[0] for name in report["runs"]}, key=MODES.index)
    figure = Figure(figsize=(6.4 * len(modes), 4.4), layout="constrained")
    for axes, mode in zip(figure.subplots(1, len(modes), squeeze=False)[0], modes):
        for (name, run), marker in zip(((name, run) for name, run in report["runs"].items()
                                        if name.startswith(mode)), "os^"):
            levels = run["levels"]
            p50 = [level["latency_p50_ms"] / 1000 for level in levels]
            p99 = [level["latency_p99_ms"] / 1000 for level in levels]
            shown = [level["completeness"] * 100 for level in levels]
            line = axes.plot(shown, p50, marker=marker, label=name.split(": ")[1])[0]
            axes.vlines(shown, p50, p99, color=line.get_color(), alpha=0.4)
        axes.set_xlabel("completeness (%)")
        axes.set_ylabel("latency (s), p50 to p99")
        axes.set_yscale("log")
        axes.set_title(f"{mode}, {report['setup'].get('engine', 'local')} engine")
        axes.grid(alpha=0.3)
        axes.legend()
    figure.savefig(path, dpi=100)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchmarks/levels.py", description=__doc__.split("\n\n")[0],
                                     epilog="See the module's docstring for what each run does.",
                                     formatter_class=DefaultsHelpFormatter)
    parser.add_argument("--seconds", type=positive_int, default=75, help="seconds of events, one a millisecond")
    parser.add_argument("--keys", type=positive_int, default=100, help="distinct keys")
    parser.add_argument("--latencies", type=reorder_latencies, default="1000,60000", metavar="MS,MS",
                        help="the reorder latencies, increasing")
    parser.add_argument("--rate", type=positive_float, default=1000.0, help="events offered a second")
    parser.add_argument("--seed", type=non_negative_int, default=1)
    parser.add_argument("--engine", choices=("local", "spark"), default="local",
                        help="the engine (spark: local[2])")
    parser.add_argument("--out", type=Path, default=Path("levels.json"), help="the JSON report")
    parser.add_argument("--plot", type=Path, help="draw the report to this PNG file too (needs matplotlib)")
    parser.add_argument("--replot", type=Path, metavar="REPORT",
                        help="run nothing: print the table of a JSON report written before (and draw it, with --plot)")
    return parser


def command(args) -> int:
    if not isinstance(args.latencies, tuple):
        print("benchmarks/levels.py: error: --latencies takes at least two latencies", file=sys.stderr)
        return 2
    say = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    if args.plot is not None:
        check_matplotlib()
    if args.replot is not None:
        report = json.loads(args.replot.read_text())
    else:
        report = bench(args.seconds, args.keys, args.seed, args.latencies, args.rate, say, args.engine)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        say(f"levels: report in {args.out}")
    print(table(report))
    if args.plot is not None:
        plot(report, args.plot)
        say(f"levels: plot in {args.plot}")
    return 0 if all(all(checks.values()) for checks in report["equal"].values()) else 1


def main(argv=None) -> int:
    return run_script(build_parser(), command, argv)


if __name__ == "__main__":
    sys.exit(main())
