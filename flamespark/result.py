"""What a run returns, on every engine."""
from dataclasses import dataclass, field

import numpy as np

PERCENTILES = (50, 75, 95, 99)


@dataclass
class Result:
    """Released outputs per sink (release order), dead-lettered late events, and metrics."""

    outputs: dict = field(default_factory=dict)
    late: list = field(default_factory=list)
    metrics: dict = field(default_factory=dict)


def replay_ratio(arrived: int, released: int) -> float:
    """Items and tombstones that reached the barrier per released item (1.0 means no replay)."""
    if released == 0:
        return 1.0 if arrived == 0 else float(arrived)
    return arrived / released


def latency_summary(latencies_ms, wall_s: float, events: int, batches: int) -> dict:
    """Percentiles of per-output latency in milliseconds, with run totals."""
    values = np.asarray(latencies_ms, dtype=float)
    summary = {f"p{p}": (float(np.percentile(values, p)) if values.size else None) for p in PERCENTILES}
    summary.update(outputs=int(values.size), events=events, wall_s=wall_s, batches=batches)
    return summary
