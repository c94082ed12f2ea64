"""The benchmark's report: medians, the ratio A/B against the goal, checks, and a table for the terminal."""
from __future__ import annotations

import os
import statistics

from benchmarks.lib.overhead.settings import Settings
from flamespark.tools.machine import machine

GOAL = 1.1  # the target: FlameSpark's wall time at most 1.1x the order-ignorant query's


def _median(values):
    values = [value for value in values if value is not None]
    return statistics.median(values) if values else None


def make_report(settings: Settings, runs: list, warmup: list, reorder_latency: int, session_s: float) -> dict:
    """The report of `settings`' runs: medians, the ratio A/B against the goal, checks, and the runs."""
    medians = {}
    for query in ("flamespark", "baseline"):
        entries = [pair[query] for pair in runs]
        medians[query] = {
            "wall_s": _median([e["wall_s"] for e in entries]),
            "total_s": _median([e["total_s"] for e in entries]),
            "events_per_s": _median([e["events_per_s"] for e in entries]),
            "micro_batches": _median([e["time"]["micro_batches"] for e in entries]),
            "batch_ms": _median([e["time"]["batch_ms"]["median"] for e in entries]),
            "first_batch_s": _median([e["time"]["first_batch_s"] for e in entries]),
            "later_batches_s": _median([e["time"]["later_batches_s"] for e in entries]),
        }
    for pair in runs:
        later = pair["baseline"]["time"]["later_batches_s"]
        pair["later_batches_ratio"] = pair["flamespark"]["time"]["later_batches_s"] / later if later else None
    ratio = _median([pair["ratio"] for pair in runs])
    checks = {
        "flamespark_outputs_equal_events": all(p["flamespark"]["outputs"] == settings.events for p in runs),
        "baseline_outputs_equal_events": all(p["baseline"]["outputs"] == settings.events for p in runs),
        "same_micro_batches": all(p["flamespark"]["time"]["micro_batches"] == p["baseline"]["time"]["micro_batches"]
                                  for p in runs),
        "nothing_late": all(p["flamespark"]["late"] == 0 for p in runs),
    }
    return {
        "benchmark": "overhead of FlameSpark over an order-ignorant Spark stateful query (issue 3)",
        "input": {"events": settings.events, "keys": settings.keys, "spacing_ms": settings.spacing_ms,
                  "percent": settings.percent, "stddev_ms": settings.stddev_ms, "seed": settings.seed,
                  "batch_rows": settings.batch_rows,
                  "reorder_latency_ms": reorder_latency},
        "queries": {
            "flamespark": "flamespark.run(engine='spark'): replay + ingest (in the read tasks) -> stateful count "
                          "TWS + barrier (by shard) -> foreachBatch",
            "baseline": f"replay -> mapInArrow (decode key) -> groupBy({settings.baseline}) TWS "
                        + ("(ValueState count per key)" if settings.baseline == "key" else "(msgpack dict per shard)")
                        + " -> foreachBatch",
        },
        "spark": {"master": settings.master, "shards": settings.shards,
                  "conf": [f"{key}={value}" for key, value in settings.conf], "session_start_s": session_s},
        "machine": dict(machine(), load_average=list(os.getloadavg())),
        "warmup": warmup,
        "runs": runs,
        "median": medians,
        "ratio": ratio,
        "later_batches_ratio": _median([pair["later_batches_ratio"] for pair in runs]),
        "goal": GOAL,
        "goal_met": ratio is not None and ratio <= GOAL,
        "checks": checks,
    }


def table(report: dict) -> str:
    """The per-run table, the medians and the ratio; then where each query's time goes."""
    lines = [f"{'run':<6} {'query':<14} {'wall s':>7} {'events/s':>8} {'batches':>7} {'batch p50 ms':>12} "
             f"{'1st batch s':>11} {'later s':>8} {'outputs':>7} {'A/B':>5}"]

    def row(label, query, entry, ratio=""):
        split = entry.get("time", entry)
        batch_ms = split["batch_ms"] if "time" not in entry else split["batch_ms"]["median"]
        lines.append(f"{label:<6} {query:<14} {entry['wall_s']:>7.1f} {entry['events_per_s']:>8,.0f} "
                     f"{split['micro_batches']:>7g} {batch_ms or 0:>12,.0f} {split['first_batch_s'] or 0:>11.1f} "
                     f"{split['later_batches_s']:>8.1f} {entry.get('outputs', ''):>7} {ratio:>5}")

    for pair in report["runs"]:
        row(str(pair["run"]), "flamespark", pair["flamespark"], f"{pair['ratio']:.2f}")
        row("", pair["baseline"]["query"], pair["baseline"])
    median = report["median"]
    row("median", "flamespark", median["flamespark"], f"{report['ratio']:.2f}")
    row("", report["runs"][0]["baseline"]["query"] if report["runs"] else "baseline", median["baseline"])
    verdict = "met" if report["goal_met"] else "NOT met"
    lines.append(f"ratio A/B of wall time (median): {report['ratio']:.2f} (goal <= {report['goal']}: {verdict}); "
                 f"of the batches after the first: {report['later_batches_ratio']:.2f}")
    lines.append("")
    lines.append("where the time goes (last run; task time summed over the shuffle partitions):")
    lines.append(f"  {'query':<14} {'operator':<16} {'update ms':>10} {'commit ms':>10}")
    last = report["runs"][-1] if report["runs"] else {}
    for query in ("flamespark", "baseline"):
        if query not in last:
            continue
        entry = last[query]
        for operator in entry["time"]["operators"]:
            lines.append(f"  {entry['query']:<14} {operator['name']:<16} {operator['update_ms']:>10,} "
                         f"{operator['commit_ms']:>10,}")
        phases = entry["time"]["phases_ms"]
        lines.append(f"  {entry['query']:<14} {'(batch total)':<16} addBatch {phases.get('addBatch', 0):,} ms, "
                     f"walCommit {phases.get('walCommit', 0):,} ms, "
                     f"queryPlanning {phases.get('queryPlanning', 0):,} ms, "
                     f"triggerExecution {phases.get('triggerExecution', 0):,} ms")
    failed = [name for name, ok in report["checks"].items() if not ok]
    lines.append("checks: " + ("all passed" if not failed else "FAILED " + ", ".join(failed)))
    return "\n".join(lines)
