"""The command line the window examples share: make their input out of order, run their graph, show results.

Each example (ad_clicks.py, smart_meters.py, sessions.py) generates in-order
events, delays some of them as the Impatience paper does (`--disorder` percent
of the events arrive late by |N(0, `--stddev-ms`)|, with flamespark's own
`disorder_pairs`), runs its graph and prints the first few results of every
sink. Events that arrive more than `--reorder-latency` ms behind the newest
one are late and dropped (the run says how many), so the results equal those
of an in-order run only when none is.

>>> disordered({"a": [(0, "x"), (1, "y")], "b": []}, percent=0, stddev_ms=0, seed=1)
{'a': [(0, 'x'), (1, 'y')], 'b': []}
"""
import argparse
import json
from pathlib import Path

import flamespark as fs
from flamespark.tools.arguments import (DefaultsHelpFormatter, non_negative_float, non_negative_int, percent,
                                        positive_int)
from flamespark.tools.disorder import disorder_pairs


def parser(description: str, *, stddev_ms: float, reorder_latency: int) -> argparse.ArgumentParser:
    """An argument parser with the options every window example takes; the example adds its own sizes."""
    made = argparse.ArgumentParser(description=description, formatter_class=DefaultsHelpFormatter)
    made.add_argument("--seed", type=non_negative_int, default=1, help="random seed of the input and its disorder")
    made.add_argument("--disorder", metavar="P", type=percent, default=30.0,
                      help="percentage of the events that arrive late (0: in event-time order)")
    made.add_argument("--stddev-ms", metavar="D", type=non_negative_float, default=stddev_ms,
                      help="a late event arrives |N(0, D)| ms after its event time")
    made.add_argument("--reorder-latency", metavar="MS", type=non_negative_int, default=reorder_latency,
                      help="how far (ms) an event may arrive behind the newest one before it counts as late")
    made.add_argument("--mode", choices=["optimistic", "buffered"], default="optimistic",
                      help="optimistic (retract and recompute) or buffered (sort in front of each window)")
    made.add_argument("--engine", choices=["local", "spark"], default="local", help="where to run")
    made.add_argument("--show", metavar="N", type=positive_int, default=5, help="results to print per sink")
    made.add_argument("--write-input", metavar="DIR", type=Path,
                      help="also write each source's events, in arrival order, to DIR/SOURCE.jsonl (for `flamespark "
                           "run` or `flamespark bench`; each line is the payload with its \"ts\")")
    return made


def disordered(inputs: dict, percent: float, stddev_ms: float, seed: int) -> dict:
    """Each source's in-order `(ts, payload)` pairs in an arrival order where `percent` % of them are late by
    |N(0, stddev_ms)| ms; each source draws its delays with a seed of its own."""
    return {name: disorder_pairs(pairs, percent, stddev_ms, seed + index)
            for index, (name, pairs) in enumerate(inputs.items())}


def write_jsonl(inputs: dict, directory: Path) -> dict:
    """Write each source's `(ts, payload)` pairs to `directory/SOURCE.jsonl`, one `{"ts": ts, **payload}` a
    line (the payload is a dict); returns the paths by source."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, pairs in inputs.items():
        paths[name] = directory / f"{name}.jsonl"
        with open(paths[name], "w") as out:
            for ts, payload in pairs:
                out.write(json.dumps({**payload, "ts": ts}) + "\n")
    return paths


def run_and_show(graph, inputs: dict, args) -> fs.Result:
    """Run `graph` over `inputs` (in order) made out of order as `args` say, and print what came out."""
    arrival = disordered(inputs, args.disorder, args.stddev_ms, args.seed)
    events = sum(map(len, arrival.values()))
    if args.write_input:
        for name, path in write_jsonl(arrival, args.write_input).items():
            print(f"{graph.name}: {name} written to {path}")
    result = fs.run(graph, arrival, engine=args.engine, mode=args.mode, reorder_latency=args.reorder_latency)
    print(f"{graph.name}: {events} events, {args.disorder:g} % of them late by |N(0, {args.stddev_ms:g} ms)|, "
          f"{len(result.late)} later than the reorder latency of {args.reorder_latency} ms (dropped)")
    for sink, outputs in result.outputs.items():
        print(f"\n{sink}: {len(outputs)} results, the first {min(args.show, len(outputs))}:")
        for output in outputs[:args.show]:
            print(f"  {output}")
    return result
