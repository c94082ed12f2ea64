"""A bench report (the dict `flamespark.tools.bench.bench` returns and writes as report.json) as Markdown:
report.md, and the line of three median latencies that ends the command."""
from __future__ import annotations

from flamespark.runtime.metrics import PERCENTILES
from flamespark.runtime.options import MODES
from flamespark.tools.scaling import scaling_markdown

# The three latencies of a bench run: (report key, key of `compare`'s raw latencies, what it measures).
LATENCIES = (
    ("speculative", "speculative", "speculative: arrival to the early result never retracted"),
    ("optimistic_final", "optimistic", "optimistic final: arrival to release"),
    ("buffered_final", "buffered", "buffered final: arrival to release"),
)


def headline(entry: dict) -> str:
    """The three latencies' medians in one line."""
    medians = entry["latencies_ms"]
    return "latency p50 " + ", ".join(f"{kind.replace('_', ' ')} {_seconds(medians[kind]['p50'])}"
                                      for kind, _, _ in LATENCIES)


def _seconds(ms) -> str:
    if ms is None:
        return "-"
    return f"{ms:.1f} ms" if ms < 1000 else f"{ms / 1000:.2f} s"


def number(value, digits=2) -> str:
    """`value` as a report shows it: thousands separated, `digits` decimals for a float, "-" for None.

    >>> number(1234567), number(0.5, 3), number(None)
    ('1,234,567', '0.500', '-')
    """
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return f"{value:,}" if isinstance(value, int) else f"{value:,.{digits}f}"


def _thirds(medians) -> str | None:
    return None if medians is None else " / ".join(f"{median:,.0f}" for median in medians)


ROWS = [
    ("events", lambda m: m["events"]),
    ("released", lambda m: m.get("released")),
    ("arrived at barrier", lambda m: m.get("arrived_at_barrier")),
    ("tombstones", lambda m: m.get("tombstones")),
    ("replay ratio", lambda m: m.get("replay_ratio")),
    ("late (dropped + adjusted)", lambda m: m.get("late_dropped", 0) + m.get("late_adjusted", 0)),
    ("peak buffered items", lambda m: m.get("peak_buffered")),
    ("events/s", lambda m: m.get("events_per_s")),
    ("wall time (s)", lambda m: m.get("wall_s")),
    ("micro-batches", lambda m: m["engine"].get("batches")),
    ("micro-batches behind their input", lambda m: _regime(m, "batches_behind")),
    ("items held back (peak at a batch's end)", lambda m: _held_back(m)),
    ("first micro-batch (s)", lambda m: m["engine"].get("first_batch_s")),
    ("events/s after the first micro-batch",
     lambda m: (m["engine"].get("after_first_batch") or {}).get("events_per_s")),
    ("micro-batch p50 (ms)", lambda m: m["engine"].get("batch_duration_ms", {}).get("p50")),
    ("micro-batch p50, first / middle / last third (ms)",
     lambda m: _thirds(m["engine"].get("batch_duration_thirds_ms"))),
    ("release delay, mean (micro-batches)", lambda m: m["engine"].get("release_delay_batches", {}).get("mean")),
] + [(f"latency p{p} (ms)", lambda m, p=p: m["latency_ms"].get(f"p{p}")) for p in PERCENTILES]


def _regime(metrics: dict, key: str):
    """A Spark run's count of `key` in its regime (`collector.regime`); None for an engine that reports none."""
    return (metrics["engine"].get("regime") or {}).get(key)


def _held_back(metrics: dict) -> str | None:
    """The items a Spark run's stages held back while behind their input, and the most held at once.

    >>> _held_back({"engine": {"regime": {"batches_behind": 3, "held_back": 1200, "peak_held_back": 700}}})
    '1,200 (700)'
    >>> _held_back({"engine": {"name": "local"}}) is None
    True
    """
    held_back = _regime(metrics, "held_back")
    return None if held_back is None else f"{held_back:,} ({_regime(metrics, 'peak_held_back'):,})"


def markdown(report: dict) -> str:
    """report.md: both modes side by side, the three latencies, and on Spark the release delays and where a
    micro-batch's time goes; then the disorder sweep, the rate sweep and the scaling runs, where the report has
    them."""
    facts = report["input"]
    lines = [
        f"# FlameSpark bench: `{report['pipeline']}`",
        "",
        f"Engine `{report['engine']}`, reorder latency {report['reorder_latency']} ms, late policy "
        f"`{report['late_policy']}`, rate {report['rate'] or 'unpaced'}; {facts['events']:,} events "
        f"({facts['late']} late). Machine: {report['machine']['cores']} cores, Python {report['machine']['python']}, "
        f"{report['machine']['platform']}.",
        "",
    ]
    for warning in report.get("pace_warnings", []):
        lines += [f"**Warning:** {warning}.", ""]
    lines += ["| | optimistic | buffered |", "|---|---:|---:|"]
    for label, get in ROWS:
        lines.append(f"| {label} | {number(get(report['optimistic']))} | {number(get(report['buffered']))} |")
    if report.get("warm_up_events"):
        lines += ["", f"Before the measured runs, both modes ran unpaced on the first {report['warm_up_events']} "
                      f"events of each source, {report['warm_up_batch_rows']} a micro-batch (results discarded), "
                      "so that neither is charged with warming up the JVM."]
    batches = " Each run's micro-batches (duration, events read): `batches.png`." if report["engine"] == "spark" else ""
    lines += ["", f"Outputs equal: **{_equality(report)}**. Latency plot: `latency.png`.{batches}", ""]
    lines += _three_latencies(report)
    lines += _release_delays(report)
    lines += _batch_time(report)
    if "sweep" in report:
        lines += [
            "## Disorder sweep",
            "",
            "| disorder % | inversions | late | replay ratio | p50 opt / buf (ms) | p99 opt / buf (ms) "
            "| events/s opt / buf | equal |",
            "|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for point in report["sweep"]:
            opt, buf = point["optimistic"], point["buffered"]
            inversions = sum(s["inversions"] for s in point["input"]["sources"].values())

            def pair(key):
                return " / ".join(number(m["latency_ms"][key], 1) for m in (opt, buf))

            lines.append(
                f"| {point['percent']:g} | {inversions:,} | {point['input']['late']} | {number(opt['replay_ratio'], 3)} "
                f"| {pair('p50')} | {pair('p99')} | {number(opt['events_per_s'], 1)} / {number(buf['events_per_s'], 1)} "
                f"| {_equality(point)} |"
            )
        lines += ["", f"Delays |N(0, {report['sweep'][0]['stddev_ms']:g} ms)|, seed {report['sweep'][0]['seed']}. "
                      "Plot: `sweep.png`.", ""]
    if "rates" in report:
        lines += rates_markdown(report)
    if "scaling" in report:
        lines += scaling_markdown(report["scaling"])
    return "\n".join(lines)


def _three_latencies(report: dict) -> list:
    """The speculative, optimistic final and buffered final latency, and the share of early results retracted."""
    lines = [
        "Three latencies from the completing event's arrival (ms):",
        "",
        "| | " + " | ".join(f"p{p}" for p in PERCENTILES) + " |",
        "|---|" + "---:|" * len(PERCENTILES),
    ]
    for kind, _, label in LATENCIES:
        values = report["latencies_ms"][kind]
        lines.append(f"| {label} | " + " | ".join(number(values[f"p{p}"], 1) for p in PERCENTILES) + " |")
    return lines + ["", f"Early results (`+` in the changelog) later retracted: {report['retracted_share']:.1%}.", ""]


def _equality(point: dict) -> str:
    if point["outputs_equal"]:
        return "yes"
    return "NO" if point["late_equal"] else "not compared: the modes took different events as late"


def rates_markdown(report: dict) -> list:
    """The lines of a rate sweep's section: latency, throughput, replay and batch length per offered rate and
    mode (`report["rates"]`, points of `flamespark.tools.bench.rate_point`), and the highest rate each mode
    sustained (`report["highest_sustained"]`)."""
    lines = [
        "## Latency against offered rate",
        "",
        "| offered (events/s) | mode | events/s | processed events/s | sustained | replay ratio | p50 | p75 | p95 "
        "| p99 (ms) | batch p50 (s) | batches behind | items held back (peak) | outputs equal |",
        "|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for point in report["rates"]:
        for mode in MODES:
            metrics, latency = point[mode], point[mode]["latency_ms"]
            lines.append(
                f"| {point['rate']:g} | {mode} | {number(metrics['events_per_s'], 1)} | "
                f"{number(metrics['processed_per_s'], 1)} | "
                f"{'yes' if metrics['sustained'] else 'no'} | {number(metrics['replay_ratio'], 3)} | "
                + " | ".join(number(latency[f"p{p}"], 0) for p in PERCENTILES)
                + f" | {number(metrics['batch_s'], 2)} | {number(_regime(metrics, 'batches_behind'))} "
                f"| {number(_held_back(metrics))} | {_equality(point)} |"
            )
    highest = report["highest_sustained"]
    lines += ["", "Highest rate sustained (processed events/s at least 95 % of the offered rate; on Spark, "
                  "counted from the second micro-batch, as the first starts the query): "
                  + ", ".join(f"{mode} {number(highest[mode], 1)}" for mode in MODES) + ". Plot: `rates.png`.", ""]
    return lines


def _release_delays(report: dict) -> list:
    """A table of how many outputs each mode released 0, 1, 2, ... micro-batches after their event arrived."""
    histograms = {mode: report[mode]["engine"].get("release_delay_batches", {}).get("histogram") for mode in MODES}
    if not all(histograms.values()):
        return []
    delays = sorted({int(delay) for histogram in histograms.values() for delay in histogram})
    lines = [
        "Micro-batches from an event's arrival to its output's release:",
        "",
        "| | " + " | ".join(map(str, delays)) + " |",
        "|---|" + "---:|" * len(delays),
    ]
    for mode, histogram in histograms.items():
        counts = {int(delay): count for delay, count in histogram.items()}
        lines.append(f"| {mode} | " + " | ".join(number(counts.get(delay)) for delay in delays) + " |")
    return lines + [""]


def _batch_time(report: dict) -> list:
    """Where a Spark micro-batch's time goes, in the run on the input and in each run of the rate sweep."""
    runs = [("the input", report)] + [(f"{point['rate']:g} events/s", point) for point in report.get("rates", [])]
    return batch_time_markdown([(label, {mode: entry[mode]["engine"].get("batch_time") for mode in MODES})
                                for label, entry in runs])


def _ms_as_seconds(ms) -> str:
    return number(None if ms is None else ms / 1000.0)


def batch_time_markdown(runs: list) -> list:
    """A table of each run's batch time per mode and stage, and its driver's phases: `runs` is a list of `(label,
    {mode: batch_time})` (`batch_time.batch_time`'s dict, None where the engine reports none, as the local
    engine's); runs without one for every mode are left out.

    >>> timing = {"batches": 4, "driver_ms": {"addBatch": 800}, "stages": [
    ...     {"stage": "1: count", "rows_ms": 300, "handler_ms": 250.4, "state_ms": 120, "commit_ms": 9,
    ...      "rows_updated": 70, "handler_total_ms": 1490.0, "state_total_ms": 610.0}]}
    >>> lines = batch_time_markdown([("10 events/s", {"optimistic": timing}), ("local", {"optimistic": None})])
    >>> print("\\n".join(lines[8:]))
    | 10 events/s | optimistic | 1: count | 300 | 250 | 120 | 9 | 70 | 1.49 | 0.61 |
    <BLANKLINE>
    - 10 events/s, optimistic, driver (medians over 4 batches): addBatch 800.
    <BLANKLINE>
    """
    runs = [(label, timings) for label, timings in runs if all(timings.values())]
    if not runs:
        return []
    lines = [
        "Where a micro-batch's time goes (Spark's progress reports and our handlers' own; medians over the batches",
        "after the first, or the first where a run has one, in ms; a stage's time is summed over its tasks, which run",
        "in parallel). Time on rows is PySpark's runner and our handlers; a handler's time includes its calls to the",
        "state store. A stage's work can come in bursts that its median batch does not show: the last two columns",
        "sum our handlers' time over every batch of the run.",
        "",
        "| run | mode | stage | on rows | in our handlers | of which state calls | committing state "
        "| rows updated | in our handlers over the run (s) | of which state calls (s) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, timings in runs:
        for mode, timing in timings.items():
            for stage in timing["stages"]:
                lines.append(f"| {label} | {mode} | {stage['stage']} | {number(stage['rows_ms'], 0)} | "
                             f"{number(stage.get('handler_ms'), 0)} | {number(stage.get('state_ms'), 0)} | "
                             f"{number(stage['commit_ms'], 0)} | {number(stage['rows_updated'], 0)} | "
                             f"{_ms_as_seconds(stage.get('handler_total_ms'))} | "
                             f"{_ms_as_seconds(stage.get('state_total_ms'))} |")
    lines.append("")
    for label, timings in runs:
        for mode, timing in timings.items():
            phases = ", ".join(f"{phase} {number(ms, 0)}" for phase, ms in timing["driver_ms"].items())
            over = "one batch" if timing["batches"] == 1 else f"medians over {timing['batches']} batches"
            lines.append(f"- {label}, {mode}, driver ({over}): {phases}.")
    return lines + [""]
