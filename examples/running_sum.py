"""Per-sensor running totals: the smallest order-sensitive pipeline.

    flamespark run examples/running_sum.py:graph --input readings=events.jsonl --out out/ --engine local

Each event is `{"ts": ..., "sensor": ..., "value": ...}`; the sink `totals`
gets `{"sensor", "ts", "total"}` after every reading, in event-time order.
"""
import random

import flamespark as fs


def add_reading(total, reading):
    total = (total or 0) + reading["value"]
    return total, [{"sensor": reading["sensor"], "ts": reading["ts"], "total": total}]


graph = fs.Graph("running_sum")
graph.source("readings").stateful(key=lambda r: r["sensor"], update=add_reading, name="totals_by_sensor").sink("totals")


def readings(events: int, sensors: int = 100, seed: int = 0):
    """`events` in-order readings, one per ms, of `sensors` sensors with values 0-9.

    >>> list(readings(2, sensors=3))
    [{'ts': 0, 'sensor': 's1', 'value': 6}, {'ts': 1, 'sensor': 's0', 'value': 4}]
    """
    rng = random.Random(seed)
    for ts in range(events):
        yield {"ts": ts, "sensor": f"s{rng.randrange(sensors)}", "value": rng.randrange(10)}


def main(argv=None):
    """Write N in-order readings as JSONL: `python examples/running_sum.py --events N --out FILE`."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description="Generate in-order sensor readings (one per ms) as JSONL.")
    parser.add_argument("--events", type=int, default=100_000, help="how many readings (default 100000)")
    parser.add_argument("--sensors", type=int, default=100, help="how many sensors (default 100)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="output JSONL file")
    args = parser.parse_args(argv)
    with open(args.out, "w") as out:
        for reading in readings(args.events, args.sensors, args.seed):
            out.write(json.dumps(reading) + "\n")


if __name__ == "__main__":
    main()
