"""`Result.metrics`, built the same way from what every engine counts.

Every engine gives the same keys; figures only one engine has go under
`metrics["engine"]`, with the engine's `name`.
"""
import numpy as np

PERCENTILES = (50, 75, 95, 99)


def replay_ratio(arrived: int, released: int) -> float:
    """Items and tombstones that reached the barrier per released item (1.0 means no replay)."""
    if released == 0:
        return 1.0 if arrived == 0 else float(arrived)
    return arrived / released


def percentiles(values) -> dict:
    """`{"p50": ..., "p99": ...}` of `values` (None where there are none)."""
    values = np.asarray(values, dtype=float)
    return {f"p{p}": (float(np.percentile(values, p)) if values.size else None) for p in PERCENTILES}


def latency_summary(latencies_ms, wall_s: float, events: int, batches: int) -> dict:
    """Percentiles of per-output latency in milliseconds, with run totals."""
    summary = percentiles(latencies_ms)
    summary.update(outputs=len(latencies_ms), events=events, wall_s=wall_s, batches=batches)
    return summary


def run_metrics(*, events: int, arrived: int, tombstones: int, released: int, late_dropped: int,
                late_adjusted: int, peak_buffered: int, wall_s: float, latencies_ms, rounds: int,
                engine: dict) -> dict:
    """A run's metrics.

    `events` were ingested (late ones dropped are not counted); `arrived` items
    and `tombstones` reached the barrier, which `released` items left;
    `peak_buffered` items were held at once at most. `latencies_ms` are the
    released outputs' latencies, `rounds` how many times the engine released
    (punctuations on the local engine, micro-batches on Spark), and `engine`
    the engine's own figures, with its `name`. `changes` is None here; a run
    that keeps a changelog fills it in (runtime.changes.Changelog.fill).
    `levels` is None too; a run with several reorder latencies gives one
    entry per level (runtime.corrections.Corrections.summary).
    """
    return {
        "events": events,
        "arrived_at_barrier": arrived,
        "tombstones": tombstones,
        "released": released,
        "replay_ratio": replay_ratio(arrived, released),
        "late_dropped": late_dropped,
        "late_adjusted": late_adjusted,
        "peak_buffered": peak_buffered,
        "wall_s": wall_s,
        "events_per_s": events / wall_s if wall_s > 0 else None,
        "latency_ms": latency_summary(latencies_ms, wall_s, events, rounds),
        "changes": None,
        "levels": None,
        "engine": engine,
    }
