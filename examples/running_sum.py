"""Per-sensor running totals: the smallest order-sensitive pipeline.

    flamespark run examples/running_sum.py:graph --input readings=events.jsonl --out out/ --engine local

Each event is `{"ts": ..., "sensor": ..., "value": ...}`; the sink `totals`
gets `{"sensor", "ts", "total"}` after every reading, in event-time order.
"""
import flamespark as fs


def add_reading(total, reading):
    total = (total or 0) + reading["value"]
    return total, [{"sensor": reading["sensor"], "ts": reading["ts"], "total": total}]


graph = fs.Graph("running_sum")
graph.source("readings").stateful(key=lambda r: r["sensor"], update=add_reading, name="totals_by_sensor").sink("totals")


def main(argv=None):
    """Write N in-order readings as JSONL: `python examples/running_sum.py --events N --out FILE`."""
    import argparse
    import json
    import random

    parser = argparse.ArgumentParser(description="Generate in-order sensor readings (one per ms) as JSONL.")
    parser.add_argument("--events", type=int, default=100_000, help="how many readings (default 100000)")
    parser.add_argument("--sensors", type=int, default=100, help="how many sensors (default 100)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="output JSONL file")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    with open(args.out, "w") as out:
        for ts in range(args.events):
            out.write(json.dumps({"ts": ts, "sensor": f"s{rng.randrange(args.sensors)}", "value": rng.randrange(10)}) + "\n")


if __name__ == "__main__":
    main()
