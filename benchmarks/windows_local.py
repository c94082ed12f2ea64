"""Tumbling-window counts on the local engine, the Impatience paper's synthetic set-up, side by side.

    python benchmarks/windows_local.py                      # 1,000,000 events, 2,000,000 for memory
    python benchmarks/windows_local.py --events 200000 --memory-events 400000 --out report.json

The input: `--events` events, one a millisecond, each of one of `--keys`
keys (100) drawn at random; the query counts each key's events per 1 s
tumbling window. The disordered input delays 30 % of them by |N(0, 64 ms)|
(flamespark's `disorder_pairs`, the paper's generator), and every system
is told the reorder latency of 256 ms: an event more than 256 ms behind the
newest one before it is late and not counted.

On the same events, in one run, each in a fresh process:

- `floor`: a plain Python program that drops the late events, sorts the rest
  and counts them with a dict: what the query costs without a framework;
- `flamespark`: `tumbling_window(...).count()` on the local engine, on the
  in-order events (optimistic mode) and on the disordered ones (optimistic
  and buffered);
- `bytewax`: Bytewax's `count_window` with an event clock that waits the
  reorder latency (its watermark driven by event time only, so that the
  machine's speed does not decide what is late) and a tumbling windower,
  run in-process with `bytewax.testing.run_main`, on the disordered events;
  once per `--bytewax-batches` size (its testing source hands on one event
  at a time by default; a real source hands on batches).

Every system's counts are checked against the floor's on the same input,
Bytewax's too, with how many results it emitted. Bytewax keeps its event
clock in each key's state, so it judges lateness against the newest event
*of the same key*: an event that is late for the others may count there, so
its counts are also checked against the floor with lateness judged per key. The exit status is 1
if a FlameSpark run's counts differ from the floor's. Last, a run of
`--memory-events` events fed from a generator (disordered a chunk at a time)
reports the process's peak resident memory: the window state is bounded by
the reorder latency, so it must not grow with the stream (what does grow is
the run's list of results, which the local engine returns in memory).

Prints a table and writes a JSON report (`--out`). Timings depend on the
machine and on what else runs on it: compare figures of one run only. On a
shared machine, a run's CPU time (its process's, beside its wall time) moves
less with the load than its wall time does: the report has the ratios of
both.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timedelta, timezone
from operator import itemgetter
from pathlib import Path

import numpy as np

if not __package__:  # run as `python benchmarks/windows_local.py`: this checkout's packages first
    import _checkout  # noqa: F401

from benchmarks.lib.measure import in_child, memory_mb, reset_peak, timed
from benchmarks.lib.script import bytewax_batches
from flamespark.tools.arguments import (DefaultsHelpFormatter, comma_separated, non_negative_float, non_negative_int,
                                      percent, positive_int)
from flamespark.tools.disorder import disorder_pairs
from flamespark.tools.machine import machine

SOURCE, SINK = "events", "counts"
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def events(count: int, keys: int, seed: int, start: int = 0) -> list:
    """`count` in-order events `(ts, key)`, one a millisecond from `start`, keys drawn uniformly from `keys`.

    >>> events(3, keys=100, seed=1)
    [(0, 47), (1, 51), (2, 75)]
    """
    drawn = np.random.default_rng((seed, start)).integers(0, keys, count)
    return list(zip(range(start, start + count), drawn.tolist()))


def arrival(count: int, keys: int, seed: int, percent_late: float, stddev_ms: float) -> list:
    """The events in arrival order: `percent_late` % of them delayed by |N(0, stddev_ms)|."""
    return disorder_pairs(events(count, keys, seed), percent_late, stddev_ms, seed)


def streamed_arrival(count: int, keys: int, seed: int, percent_late: float, stddev_ms: float, chunk: int = 100_000):
    """`arrival` as a generator, a chunk of events at a time, so that the input never sits in memory whole.
    A delay does not carry an event past the end of its chunk, so the last few of each chunk come a little less
    late than `arrival` would make them."""
    for start in range(0, count, chunk):
        ordered = events(min(chunk, count - start), keys, seed, start)
        yield from disorder_pairs(ordered, percent_late, stddev_ms, seed + start)


def count_graph(size: int):
    """Each key's events per tumbling window of `size` ms: `{"key", "start", "end", "value"}`. A payload is its
    key, an int, so the key function is `int` (a builtin: Spark's workers need nothing of this file to run it)."""
    import flamespark as fs

    graph = fs.Graph("windowed_count")
    graph.source(SOURCE).tumbling_window(key=int, size=size, name="per_key").count().sink(SINK)
    return graph


# --- the runs, each in a process of its own ----------------------------------------------------------------

def _measured(count_windows, pairs: list) -> dict:
    """Time `count_windows(pairs) -> (counts, facts)`; `counts` maps `(key, start)` to the count."""
    (counts, facts), took = timed(lambda: count_windows(pairs))
    return {**took, "events_per_s": len(pairs) / took["wall_s"], "windows": len(counts), **facts, "counts": counts}


def on_time(pairs: list, reorder_latency: int, clock=None) -> tuple[list, int]:
    """The pairs that are not late, sorted by time (a stable sort), and how many were late. An event is late when
    it is more than `reorder_latency` behind the newest before it in arrival order, or with `clock` (a function of
    the payload), the newest before it of the same `clock(payload)`: Bytewax keeps its clock in each key's state.

    >>> on_time([(1000, "a"), (1100, "a"), (800, "b"), (900, "a")], reorder_latency=256)
    ([(900, 'a'), (1000, 'a'), (1100, 'a')], 1)
    >>> on_time([(1000, "a"), (1100, "a"), (800, "b"), (900, "a")], 256, clock=lambda key: key)
    ([(800, 'b'), (900, 'a'), (1000, 'a'), (1100, 'a')], 0)
    """
    newest, kept, late = {}, [], 0
    for ts, payload in pairs:
        judged_by = clock(payload) if clock else None
        if judged_by in newest and ts < newest[judged_by] - reorder_latency:
            late += 1
            continue
        if ts > newest.get(judged_by, ts - 1):
            newest[judged_by] = ts
        kept.append((ts, payload))
    kept.sort(key=itemgetter(0))
    return kept, late


def floor_counts(pairs: list, size: int, reorder_latency: int, per_key: bool = False) -> tuple[dict, dict]:
    """The plain program: drop the late events, sort the others by time and count them per key and window.
    Lateness is judged as `on_time` judges it, with `per_key` against the newest event of the same key.

    >>> floor_counts([(1000, "a"), (1100, "a"), (800, "b"), (900, "a")], size=1000, reorder_latency=256)
    ({('a', 0): 1, ('a', 1000): 2}, {'late': 1})
    >>> floor_counts([(1000, "a"), (1100, "a"), (800, "b"), (900, "a")], 1000, 256, per_key=True)[0]
    {('b', 0): 1, ('a', 0): 1, ('a', 1000): 2}
    """
    kept, late = on_time(pairs, reorder_latency, (lambda key: key) if per_key else None)
    counts = {}
    for ts, key in kept:
        window = (key, ts - ts % size)
        counts[window] = counts.get(window, 0) + 1
    return counts, {"late": late}


def flamespark_counts(pairs, size: int, reorder_latency: int, mode: str) -> tuple[dict, dict]:
    """The query on the local engine; the counts as the floor gives them, checked one result per window."""
    import flamespark as fs

    result = fs.run(count_graph(size), {SOURCE: pairs}, mode=mode, reorder_latency=reorder_latency, progress=False)
    counts = {}
    for window in result.outputs[SINK]:
        assert window["end"] == window["start"] + size, window
        assert (window["key"], window["start"]) not in counts, f"two results for one window: {window}"
        counts[window["key"], window["start"]] = window["value"]
    return counts, {"late": len(result.late), "replay_ratio": result.metrics["replay_ratio"]}


def bytewax_windowing(ts_getter, reorder_latency: int, size: int) -> tuple:
    """Bytewax's event clock that waits `reorder_latency` ms, `ts_getter(item)` an item's event time (a UTC
    datetime), and its tumbling windower of `size` ms, aligned to the epoch: window `n` starts at `n * size`."""
    from bytewax.operators import windowing

    # A constant "system time" makes the watermark the newest event time less the wait, as FlameSpark's
    # punctuation is; with the real clock, the watermark would also advance with the machine's time.
    clock = windowing.EventClock(ts_getter, wait_for_system_duration=timedelta(milliseconds=reorder_latency),
                                 now_getter=lambda: EPOCH, to_system_utc=lambda _: None)
    return clock, windowing.TumblingWindower(length=timedelta(milliseconds=size), align_to=EPOCH)


def bytewax_counts(pairs: list, size: int, reorder_latency: int, batch_size: int) -> tuple[dict, dict]:
    """Bytewax's `count_window` over the same events; `emitted` counts what it sent down, `late` what it set
    aside as late."""
    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.operators import windowing
    from bytewax.testing import TestingSink, TestingSource, run_main

    flow = Dataflow("windowed_count")
    stream = op.input("events", flow, TestingSource(pairs, batch_size))
    clock, windower = bytewax_windowing(lambda event: EPOCH + timedelta(milliseconds=event[0]), reorder_latency, size)
    counted = windowing.count_window("count", stream, clock, windower, key=lambda event: str(event[1]))
    down, late = [], []
    op.output("down", counted.down, TestingSink(down))
    op.output("late", counted.late, TestingSink(late))
    run_main(flow)
    counts = {}
    for key, (window_id, count) in down:
        counts[int(key), window_id * size] = count  # windows are numbered from align_to
    return counts, {"emitted": len(down), "late": len(late)}


def run_system(system: str, count: int, keys: int, seed: int, disorder: tuple | None, size: int,
               reorder_latency: int, batch_size: int) -> dict:
    """One measured run, in its own process: make the input (untimed), then time the system on it."""
    pairs = arrival(count, keys, seed, *disorder) if disorder else events(count, keys, seed)
    if system == "floor":
        return _measured(lambda p: floor_counts(p, size, reorder_latency), pairs)
    if system == "bytewax":
        import bytewax.operators.windowing  # noqa: F401 (imported before the clock starts, as FlameSpark is)
        import bytewax.testing  # noqa: F401

        measured = _measured(lambda p: bytewax_counts(p, size, reorder_latency, batch_size), pairs)
        measured["equal_to_per_key_floor"] = measured["counts"] == floor_counts(pairs, size, reorder_latency, True)[0]
        return measured
    import flamespark.engines.local  # noqa: F401 (imported before the clock starts, as plain Python imports nothing)

    return _measured(lambda p: flamespark_counts(p, size, reorder_latency, system.split(":")[1]), pairs)


def memory_run(count: int, keys: int, seed: int, disorder: tuple, size: int, reorder_latency: int) -> dict:
    """The query over `count` events fed from a generator; the process's peak resident memory."""
    import flamespark as fs

    reset_peak()
    baseline_mb = memory_mb("VmRSS")
    started = time.perf_counter()
    result = fs.run(count_graph(size), {SOURCE: streamed_arrival(count, keys, seed, *disorder)}, progress=False,
                    reorder_latency=reorder_latency)
    return {"events": count, "wall_s": time.perf_counter() - started, "windows": len(result.outputs[SINK]),
            "late": len(result.late), "before_run_mb": baseline_mb, "peak_rss_mb": memory_mb()}


# --- the report ----------------------------------------------------------------------------------------------

def compare(runs: dict, floors: dict, field: str = "counts", parts: str = "windows") -> dict:
    """Per run, whether its `field` equals the floor's on the same input; the `field` leaves the report here. A
    `field` is a dict of `parts` (the counts: one entry per window); where it differs, the run's report says in how
    many of them (`differing_windows`)."""
    equal = {}
    for name, measured in runs.items():
        results, reference = measured.pop(field), floors[measured["input"]]
        equal[name] = results == reference
        if not equal[name]:
            measured[f"differing_{parts}"] = sum(results.get(part) != reference.get(part)
                                                 for part in set(results) | set(reference))
    return equal


def table(report: dict) -> str:
    lines = [f"{'run':<24} {'input':<11} {'events/s':>10} {'wall s':>7} {'cpu s':>7} {'windows':>8} {'late':>5} "
             f"{'equal':>6} {'x floor, wall':>13} {'cpu':>5} {'peak MB':>8}"]
    ratios = report["ratios"]
    for name, run in report["runs"].items():
        lines.append(f"{name:<24} {run['input']:<11} {run['events_per_s']:>10,.0f} {run['wall_s']:>7.2f} "
                     f"{run['cpu_s']:>7.2f} {run['windows']:>8} {run['late']:>5} {str(report['equal'][name]):>6} "
                     f"{ratios['wall']['to_floor'][name]:>13.2f} {ratios['cpu']['to_floor'][name]:>5.1f} "
                     f"{run['peak_mb']:>8.0f}")
    lines.append(f"\nFlameSpark disordered / in order: {ratios['wall']['disordered_to_in_order']:.2f} (wall), "
                 f"{ratios['cpu']['disordered_to_in_order']:.2f} (cpu)")
    for batch in report["setup"]["bytewax_batch_sizes"]:
        bytewax, over = report["runs"][f"bytewax batch {batch}"], f"bytewax_batch_{batch}_to_flamespark"
        lines.append(f"Bytewax batch {batch} / FlameSpark disordered: {ratios['wall'][over]:.2f} (wall), "
                     f"{ratios['cpu'][over]:.2f} (cpu); Bytewax emitted {bytewax['emitted']} results for "
                     f"{bytewax['windows']} windows, {bytewax['late']} late; its counts equal the floor's with "
                     f"lateness judged per key: {bytewax['equal_to_per_key_floor']}")
    memory = report.get("memory")
    if memory:
        lines.append(f"memory: {memory['events']:,} events from a generator, peak RSS {memory['peak_rss_mb']:.0f} MB "
                     f"({memory['before_run_mb']:.0f} MB before the run), {memory['windows']} windows, "
                     f"{memory['wall_s']:.1f} s")
    return "\n".join(lines)


def ratios_of(runs: dict, field: str, bytewax_batches) -> dict:
    """Ratios of the runs' `field` (wall_s or cpu_s): each run to the floor on the same input, FlameSpark's
    disordered run to its in-order one, and each Bytewax run to FlameSpark's disordered one (above 1:
    FlameSpark took less)."""
    floor = {runs[name]["input"]: runs[name][field] for name in ("floor", "floor:disordered")}
    disordered = runs["flamespark disordered"][field]
    made = {"to_floor": {name: run[field] / floor[run["input"]] for name, run in runs.items()},
            "disordered_to_in_order": disordered / runs["flamespark in order"][field]}
    for batch in bytewax_batches:
        made[f"bytewax_batch_{batch}_to_flamespark"] = runs[f"bytewax batch {batch}"][field] / disordered
    return made


def bench(count: int, keys: int, seed: int, size: int, reorder_latency: int, disorder: tuple, memory_events: int,
          bytewax_batches: tuple = (), say=print) -> dict:
    """Every run of the module's docstring; the report."""
    plan = [("floor", "floor", None, None), ("floor", "floor:disordered", disorder, None),
            ("flamespark:optimistic", "flamespark in order", None, None),
            ("flamespark:optimistic", "flamespark disordered", disorder, None),
            ("flamespark:buffered", "flamespark buffered", disorder, None)]
    plan += [("bytewax", f"bytewax batch {batch}", disorder, batch) for batch in bytewax_batches]
    runs, floors = {}, {}
    for system, name, how, batch in plan:
        say(f"windows_local: {name} on {count:,} events ...")
        measured = in_child(run_system, system, count, keys, seed, how, size, reorder_latency, batch)
        measured["input"] = "disordered" if how else "in order"
        if system == "floor":
            floors[measured["input"]] = measured["counts"]
        runs[name] = measured
    equal = compare(runs, floors)
    ratios = {times: ratios_of(runs, f"{times}_s", bytewax_batches) for times in ("wall", "cpu")}
    report = {"setup": {"events": count, "keys": keys, "window_ms": size, "reorder_latency_ms": reorder_latency,
                        "percent_late": disorder[0], "stddev_ms": disorder[1], "seed": seed,
                        "bytewax_batch_sizes": list(bytewax_batches)},
              "machine": machine(), "runs": runs, "equal": equal, "ratios": ratios}
    if memory_events:
        say(f"windows_local: memory run on {memory_events:,} events from a generator ...")
        report["memory"] = in_child(memory_run, memory_events, keys, seed, disorder, size, reorder_latency)
    return report


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchmarks/windows_local.py", description=__doc__.split("\n\n")[0],
                                     epilog="See the module's docstring for what each run does.",
                                     formatter_class=DefaultsHelpFormatter)
    parser.add_argument("--events", type=positive_int, default=1_000_000, help="events of the timed runs")
    parser.add_argument("--keys", type=positive_int, default=100, help="distinct keys")
    parser.add_argument("--window-ms", type=positive_int, default=1000, help="tumbling window size")
    parser.add_argument("--percent", type=percent, default=30.0, help="share of the events delayed, in %%")
    parser.add_argument("--stddev-ms", type=non_negative_float, default=64.0, metavar="MS",
                        help="the delays' standard deviation: a delayed event's delay is |N(0, MS)| ms")
    parser.add_argument("--reorder-latency", type=non_negative_int, default=256, help="ms")
    parser.add_argument("--memory-events", type=non_negative_int, default=2_000_000,
                        help="events of the memory run fed from a generator (0: no memory run)")
    parser.add_argument("--bytewax-batches", type=comma_separated(positive_int), default=(1, 1000), metavar="N,M",
                        help="one Bytewax run for each: events its testing source hands on at a time (1 is its "
                             "default)")
    parser.add_argument("--no-bytewax", action="store_true", help="leave Bytewax out")
    parser.add_argument("--seed", type=non_negative_int, default=1)
    parser.add_argument("--out", type=Path, default=Path("windows_local.json"), help="the JSON report")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    batches = bytewax_batches("windows_local", args)
    if batches is None:
        return 2
    say = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    report = bench(args.events, args.keys, args.seed, args.window_ms, args.reorder_latency,
                   (args.percent, args.stddev_ms), args.memory_events, batches, say)
    print(table(report))
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    say(f"windows_local: report in {args.out}")
    return 0 if all(equal for name, equal in report["equal"].items() if name.startswith("flamespark")) else 1


if __name__ == "__main__":
    sys.exit(main())
