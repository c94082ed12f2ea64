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
