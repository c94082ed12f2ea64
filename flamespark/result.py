"""What a run returns, on every engine."""
from dataclasses import dataclass, field


@dataclass
class Result:
    """Released outputs per sink (release order), dead-lettered late events, and metrics.

    `metrics` has the same keys on every engine (see flamespark.runtime.metrics);
    `metrics["engine"]` holds the figures only the engine that ran has.
    """

    outputs: dict = field(default_factory=dict)
    late: list = field(default_factory=list)
    metrics: dict = field(default_factory=dict)
