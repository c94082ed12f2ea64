"""Running sums through a user's `update` on the local engine, the Impatience paper's synthetic set-up, side by side.

    python benchmarks/running_sum.py                        # 200,000 events, 3 rounds; Bytewax 1,000 a batch
    python benchmarks/running_sum.py --events 20000 --repeat 1 --bytewax-batches 1,1000 --out report.json

The input is that of benchmarks/windows_local.py: `--events` events, one a
millisecond, each of one of `--keys` keys (100) drawn at random, 30 % of
them delayed by |N(0, 64 ms)|, and a reorder latency of 256 ms: an event
more than 256 ms behind the newest one before it is late and dropped. A
payload is a small dict, `{"key", "ts", "value"}` (the value is the time
mod 10, so that it does not depend on the arrival order), the same for
every system. The query is one user function, `update(total, event) ->
(total, outputs)`, which every system calls per key in event-time order:
it emits `{"key", "ts", "total"}`, the key's running sum after each event.

On the same events, in one run, each in a fresh process:

- `floor`: a plain Python program that drops the late events, sorts the
  others by time and calls `update` on each in turn with its key's state:
  what the query costs without a framework;
- `flamespark`: `stateful(key=..., update=update)` on the local engine, on
  the in-order events (optimistic mode) and on the disordered ones
  (optimistic and buffered);
- `bytewax`: Bytewax's exact path for an order-sensitive `update`, on the
  disordered events, run in-process with `bytewax.testing.run_main`:
  `collect_window` with `ordered=True` (an event clock that waits the
  reorder latency, its watermark driven by event time only, and tumbling
  windows of `--window-ms`) hands on each key's windows, closed in time
  order with their values sorted, and `stateful_flat_map` calls `update`
  on the values in turn; once per `--bytewax-batches` size (the events its
  testing source hands on at a time).

The runs go round `--repeat` times, one after the other in each round, so
that a change in the machine's load falls on all of them alike. A run's
figures are the medians of its rounds' (each round's beside them), and
its ratios to the others are of those medians; the report also has each
round's ratios, to show the noise.

Every run's outputs are checked against the floor's on the same input, as
per-key sequences: each key's outputs, in order. Bytewax keeps its event
clock in each key's state, so it judges lateness against the newest event
*of the same key* and may keep an event the others drop: its outputs are
also checked against a floor that judges lateness per key. The exit status
is 1 if a FlameSpark run's outputs differ from the floor's.

Prints a table and writes a JSON report (`--out`). Timings depend on the
machine and on what else runs on it: compare figures of one run only; a
run's CPU time (its process's, beside its wall time) moves less with the
load of a shared machine than its wall time does, though still by tens of
per cent on a small machine others keep busy: hence the rounds.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from datetime import timedelta
from operator import itemgetter
from pathlib import Path

if not __package__:  # run as `python benchmarks/running_sum.py`: this checkout's packages first
    import _checkout  # noqa: F401

from benchmarks.lib.measure import in_child, timed
from benchmarks.lib.script import bytewax_batches
from benchmarks.windows_local import EPOCH, arrival, bytewax_windowing, compare, events, on_time, ratios_of
from flamespark.tools.arguments import (DefaultsHelpFormatter, comma_separated, non_negative_float, non_negative_int,
                                      percent, positive_int)
from flamespark.tools.machine import machine

SOURCE, SINK = "events", "totals"


def update(total, event):
    """The user's function: a key's running sum after `event`, emitted with the event's key and time.

    >>> update(None, {"key": 7, "ts": 3, "value": 2})
    (2, [{'key': 7, 'ts': 3, 'total': 2}])
    """
    total = (total or 0) + event["value"]
    return total, [{"key": event["key"], "ts": event["ts"], "total": total}]


def readings(pairs: list) -> list:
    """`(ts, key)` pairs (windows_local's `events` or `arrival`) as the query's input: `(ts, payload)` pairs.

    >>> readings([(12, 47), (3, 51)])
    [(12, {'key': 47, 'ts': 12, 'value': 2}), (3, {'key': 51, 'ts': 3, 'value': 3})]
    """
    return [(ts, {"key": key, "ts": ts, "value": ts % 10}) for ts, key in pairs]


def per_key(outputs) -> dict:
    """The outputs as per-key sequences, `{key: [(ts, total), ...]}` in the order given: what every run is checked
    on (systems that work per key need not interleave the keys as the floor does).

    >>> per_key([{"key": 1, "ts": 0, "total": 4}, {"key": 2, "ts": 1, "total": 1}, {"key": 1, "ts": 2, "total": 6}])
    {1: [(0, 4), (2, 6)], 2: [(1, 1)]}
    """
    sequences = {}
    for output in outputs:
        sequences.setdefault(output["key"], []).append((output["ts"], output["total"]))
    return sequences


def sum_graph():
    """The query on FlameSpark: `update` per key, in event-time order."""
    import flamespark as fs

    graph = fs.Graph("running_sum")
    graph.source(SOURCE).stateful(key=itemgetter("key"), update=update, name="totals_by_key").sink(SINK)
    return graph


# --- the runs, each in a process of its own ----------------------------------------------------------------

def _measured(run, events: int) -> dict:
    """Time `run() -> (outputs, facts)` over `events` events; the outputs leave it as per-key sequences, which
    are made once the clock has stopped."""
    (outputs, facts), took = timed(run)
    return {**took, "events_per_s": events / took["wall_s"], "outputs": len(outputs), **facts,
            "sequences": per_key(outputs)}


def floor_outputs(pairs: list, reorder_latency: int, clock=None) -> tuple[list, dict]:
    """The plain program: drop the late events (as windows_local's `on_time` judges them, with `clock` per
    `clock(payload)`), sort the others by time and call `update` on each with its key's state.

    >>> pairs = [(1000, {"key": "a", "ts": 1000, "value": 1}), (1300, {"key": "a", "ts": 1300, "value": 2}),
    ...          (1000, {"key": "b", "ts": 1000, "value": 4}), (1200, {"key": "a", "ts": 1200, "value": 3})]
    >>> outputs, facts = floor_outputs(pairs, reorder_latency=256)
    >>> per_key(outputs), facts
    ({'a': [(1000, 1), (1200, 4), (1300, 6)]}, {'late': 1})
    >>> per_key(floor_outputs(pairs, 256, clock=itemgetter("key"))[0])  # b's event is the first of its key
    {'a': [(1000, 1), (1200, 4), (1300, 6)], 'b': [(1000, 4)]}
    """
    kept, late = on_time(pairs, reorder_latency, clock)
    states, outputs = {}, []
    for _, event in kept:
        key = event["key"]
        states[key], emitted = update(states.get(key), event)
        outputs.extend(emitted)
    return outputs, {"late": late}


def flamespark_outputs(pairs: list, reorder_latency: int, mode: str) -> tuple[list, dict]:
    """The query on the local engine; its released outputs."""
    import flamespark as fs

    result = fs.run(sum_graph(), {SOURCE: pairs}, mode=mode, reorder_latency=reorder_latency, progress=False)
    return result.outputs[SINK], {"late": len(result.late), "replay_ratio": result.metrics["replay_ratio"]}


def bytewax_outputs(items: list, reorder_latency: int, size: int, batch_size: int) -> tuple[list, dict]:
    """Bytewax's exact path over the payloads `items`, in arrival order: each key's events ordered through
    `collect_window(ordered=True)`, then `update` per key on each window's values in turn. A key's windows close
    in time order, one after the other, so `update` sees the key's events in event-time order. `late` counts
    what the windows set aside as late."""
    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.operators import windowing
    from bytewax.testing import TestingSink, TestingSource, run_main

    flow = Dataflow("running_sum")
    keyed = op.key_on("key", op.input("events", flow, TestingSource(items, batch_size)),
                      lambda event: str(event["key"]))  # Bytewax's keys are strings
    clock, windower = bytewax_windowing(lambda event: EPOCH + timedelta(milliseconds=event["ts"]), reorder_latency,
                                        size)
    windows = windowing.collect_window("order", keyed, clock, windower, ordered=True)
    ordered = op.flat_map_value("values", windows.down, itemgetter(1))  # (window_id, values) -> its values
    # stateful_flat_map takes `update` as it is: (state, outputs), where stateful_map would wrap it in a shim
    # of its own and emit the list of outputs, to be flattened by one more step.
    totals = op.stateful_flat_map("sum", ordered, update)
    down, late = [], []
    op.output("down", totals, TestingSink(down))
    op.output("late", windows.late, TestingSink(late))
    run_main(flow)
    return [output for _, output in down], {"late": len(late)}


def run_system(system: str, count: int, keys: int, seed: int, disorder: tuple | None, reorder_latency: int,
               size: int, batch_size: int | None) -> dict:
    """One measured run, in its own process: make the input (untimed), then time the system on it."""
    pairs = readings(arrival(count, keys, seed, *disorder) if disorder else events(count, keys, seed))
    if system == "floor":
        return _measured(lambda: floor_outputs(pairs, reorder_latency), len(pairs))
    if system == "bytewax":
        import bytewax.operators.windowing  # noqa: F401 (imported before the clock starts, as FlameSpark is)
        import bytewax.testing  # noqa: F401

        items = [payload for _, payload in pairs]  # Bytewax's items carry their time in them
        measured = _measured(lambda: bytewax_outputs(items, reorder_latency, size, batch_size), len(items))
        per_key_floor = per_key(floor_outputs(pairs, reorder_latency, clock=itemgetter("key"))[0])
        measured["equal_to_per_key_floor"] = measured["sequences"] == per_key_floor
        return measured
    import flamespark.engines.local  # noqa: F401 (imported before the clock starts, as plain Python imports nothing)

    return _measured(lambda: flamespark_outputs(pairs, reorder_latency, system.split(":")[1]), len(pairs))


# --- the report ----------------------------------------------------------------------------------------------

def _spread(values) -> str:
    return f"{min(values):.2f}-{max(values):.2f}" if len(values) > 1 else f"{values[0]:.2f}"


def table(report: dict) -> str:
    rounds = report["setup"]["rounds"]
    lines = [f"{'run':<24} {'input':<11} {'events/s':>10} {'wall s':>7} {'cpu s':>7} {'outputs':>8} {'late':>5} "
             f"{'equal':>6} {'x floor, wall':>13} {'cpu':>5} {'peak MB':>8}"]
    ratios, per_round = report["ratios"], report["round_ratios"]
    for name, run in report["runs"].items():
        lines.append(f"{name:<24} {run['input']:<11} {run['events_per_s']:>10,.0f} {run['wall_s']:>7.2f} "
                     f"{run['cpu_s']:>7.2f} {run['outputs']:>8} {run['late']:>5} {str(report['equal'][name]):>6} "
                     f"{ratios['wall']['to_floor'][name]:>13.2f} {ratios['cpu']['to_floor'][name]:>5.1f} "
                     f"{run['peak_mb']:>8.0f}")
    lines.append(f"\nMedians of {rounds} round{'s' if rounds > 1 else ''}; ratios of the medians, the rounds' "
                 f"range beside each.")

    def ratio(over: str) -> str:
        return ", ".join(f"{ratios[times][over]:.2f} ({times}; {_spread([r[over] for r in per_round[times]])})"
                         for times in ("wall", "cpu"))

    lines.append(f"FlameSpark disordered / in order: {ratio('disordered_to_in_order')}")
    for batch in report["setup"]["bytewax_batch_sizes"]:
        bytewax, over = report["runs"][f"bytewax batch {batch}"], f"bytewax_batch_{batch}_to_flamespark"
        lines.append(f"Bytewax batch {batch} / FlameSpark disordered: {ratio(over)}; "
                     f"{bytewax['late']} late for Bytewax; its outputs equal the floor's with lateness judged per "
                     f"key: {bytewax['equal_to_per_key_floor']}")
    return "\n".join(lines)


def _over_rounds(rounds: list, events: int) -> dict:
    """One run's figures over its rounds: the median wall and CPU times (and the `events` a second of the median
    wall time), each round's beside them, the highest peak memory; its other facts, which the rounds share (their
    input is the same), from the first."""
    wall_s, cpu_s = ([run[field] for run in rounds] for field in ("wall_s", "cpu_s"))
    first = rounds[0]
    merged = {**first, "wall_s": statistics.median(wall_s), "cpu_s": statistics.median(cpu_s),
              "events_per_s": events / statistics.median(wall_s),
              "peak_mb": max(run["peak_mb"] for run in rounds), "rounds_wall_s": wall_s, "rounds_cpu_s": cpu_s}
    differing = [run["differing_keys"] for run in rounds if "differing_keys" in run]
    if differing:
        merged["differing_keys"] = max(differing)
    return merged


def bench(count: int, keys: int, seed: int, reorder_latency: int, disorder: tuple, size: int,
          bytewax_batches: tuple = (), repeat: int = 3, say=print) -> dict:
    """Every run of the module's docstring, `repeat` rounds of them; the report."""
    plan = [("floor", "floor", None, None), ("floor", "floor:disordered", disorder, None),
            ("flamespark:optimistic", "flamespark in order", None, None),
            ("flamespark:optimistic", "flamespark disordered", disorder, None),
            ("flamespark:buffered", "flamespark buffered", disorder, None)]
    plan += [("bytewax", f"bytewax batch {batch}", disorder, batch) for batch in bytewax_batches]
    rounds, floors, equal = [], {}, {name: True for _, name, _, _ in plan}
    for number in range(1, repeat + 1):
        runs = {}
        for system, name, how, batch in plan:
            say(f"running_sum: {name} on {count:,} events (round {number} of {repeat}) ...")
            measured = in_child(run_system, system, count, keys, seed, how, reorder_latency, size, batch)
            measured["input"] = "disordered" if how else "in order"
            if system == "floor" and measured["input"] not in floors:  # the floors come first in every round
                floors[measured["input"]] = measured["sequences"]
            runs[name] = measured
        # Each round is checked as it ends, so that only the floors' outputs stay in memory.
        for name, same in compare(runs, floors, field="sequences", parts="keys").items():
            equal[name] = equal[name] and same
        rounds.append(runs)
    runs = {name: _over_rounds([runs[name] for runs in rounds], count) for _, name, _, _ in plan}
    ratios, round_ratios = {}, {}
    for times in ("wall", "cpu"):
        ratios[times] = ratios_of(runs, f"{times}_s", bytewax_batches)
        round_ratios[times] = [ratios_of(each, f"{times}_s", bytewax_batches) for each in rounds]
    return {"setup": {"events": count, "keys": keys, "reorder_latency_ms": reorder_latency,
                      "percent_late": disorder[0], "stddev_ms": disorder[1], "seed": seed,
                      "bytewax_window_ms": size, "bytewax_batch_sizes": list(bytewax_batches), "rounds": repeat},
            "machine": machine(), "runs": runs, "equal": equal, "ratios": ratios, "round_ratios": round_ratios}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchmarks/running_sum.py", description=__doc__.split("\n\n")[0],
                                     epilog="See the module's docstring for what each run does.",
                                     formatter_class=DefaultsHelpFormatter)
    parser.add_argument("--events", type=positive_int, default=200_000, help="events of each run")
    parser.add_argument("--keys", type=positive_int, default=100, help="distinct keys")
    parser.add_argument("--percent", type=percent, default=30.0, help="share of the events delayed, in %%")
    parser.add_argument("--stddev-ms", type=non_negative_float, default=64.0, metavar="MS",
                        help="the delays' standard deviation: a delayed event's delay is |N(0, MS)| ms")
    parser.add_argument("--reorder-latency", type=non_negative_int, default=256, help="ms")
    parser.add_argument("--window-ms", type=positive_int, default=1000,
                        help="Bytewax's tumbling windows, through which it orders each key's events")
    parser.add_argument("--bytewax-batches", type=comma_separated(positive_int), default=(1000,), metavar="N,M",
                        help="one Bytewax run for each: events its testing source hands on at a time")
    parser.add_argument("--no-bytewax", action="store_true", help="leave Bytewax out")
    parser.add_argument("--repeat", type=positive_int, default=3, help="rounds of every run")
    parser.add_argument("--seed", type=non_negative_int, default=1)
    parser.add_argument("--out", type=Path, default=Path("running_sum.json"), help="the JSON report")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    batches = bytewax_batches("running_sum", args)
    if batches is None:
        return 2
    say = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    report = bench(args.events, args.keys, args.seed, args.reorder_latency, (args.percent, args.stddev_ms),
                   args.window_ms, batches, args.repeat, say)
    print(table(report))
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    say(f"running_sum: report in {args.out}")
    return 0 if all(equal for name, equal in report["equal"].items() if name.startswith("flamespark")) else 1


if __name__ == "__main__":
    sys.exit(main())
