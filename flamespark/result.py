"""What a run returns, on every engine."""
from dataclasses import dataclass, field


@dataclass
class Result:
    """Released outputs per sink (release order), dead-lettered late events, and metrics.

    `metrics` has the same keys on every engine (see flamespark.runtime.metrics);
    `metrics["engine"]` holds the figures only the engine that ran has.
    `latencies_ms` has every released output's latency, in release order.
    With `changes=True`, `changes` maps each sink to its changelog, in
    emission order: records `{"op": "+" or "-", "ts", "payload", "cause"}`
    (see flamespark.runtime.changes), and `speculative_latencies_ms` has the
    latency of every `+` never retracted; both are empty otherwise.
    With several reorder latencies, `corrections` maps each sink to what the
    later levels change among its outputs, records `{"op", "ts", "payload",
    "cause", "level"}` in release order (see flamespark.runtime.corrections).

    A running total whose second value comes late, with its changelog
    (`batch_size=1` makes each event a batch of its own, as a live stream
    that the engine keeps up with applies it; a list's events would all
    land in one batch, applied in meta order, and nothing would be retracted):

    >>> import flamespark as fs
    >>> def add(total, value):
    ...     total = (total or 0) + value
    ...     return total, [total]
    >>> graph = fs.Graph("totals")
    >>> graph.source("values").stateful(key=lambda value: 0, update=add).sink("totals")
    >>> result = fs.run(graph, {"values": [(5, 2), (3, 1)]}, reorder_latency=10, changes=True, batch_size=1)
    >>> result.outputs, result.late, result.metrics["released"]
    ({'totals': [1, 3]}, [], 2)
    >>> for record in result.changes["totals"]:
    ...     print(record)
    {'op': '+', 'ts': 5, 'payload': 2, 'cause': None}
    {'op': '+', 'ts': 3, 'payload': 1, 'cause': None}
    {'op': '+', 'ts': 5, 'payload': 3, 'cause': None}
    {'op': '-', 'ts': 5, 'payload': 2, 'cause': {'source': 'values', 'ts': 3, 'position': 1}}
    """

    outputs: dict = field(default_factory=dict)
    late: list = field(default_factory=list)
    metrics: dict = field(default_factory=dict)
    latencies_ms: list = field(default_factory=list)
    changes: dict = field(default_factory=dict)
    speculative_latencies_ms: list = field(default_factory=list)
    corrections: dict = field(default_factory=dict)
