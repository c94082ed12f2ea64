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
    """

    outputs: dict = field(default_factory=dict)
    late: list = field(default_factory=list)
    metrics: dict = field(default_factory=dict)
    latencies_ms: list = field(default_factory=list)
    changes: dict = field(default_factory=dict)
    speculative_latencies_ms: list = field(default_factory=list)
