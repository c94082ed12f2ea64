"""Where a Spark run's micro-batch time goes, from Spark's own progress reports and our handlers' own.

A report's `durationMs` splits a micro-batch on the driver: `addBatch` runs
the batch's tasks, `queryPlanning` plans it, `walCommit` and
`commitOffsets` record its offsets. Each stateful operator (one per stage
of ours) reports its tasks' time on rows (`allUpdatesTimeMs`: PySpark's
runner with our Python handlers and their state-store calls) and on
committing its state store (`commitTimeMs`), each summed over the stage's
tasks, which run in parallel. Our handlers report theirs in metric rows
(`blob.handler`): in all, and in state-store calls.
"""
import statistics

DRIVER_PHASES = ("triggerExecution", "latestOffset", "queryPlanning", "addBatch", "walCommit", "commitOffsets")


def stateful_operators(report: dict) -> list:
    """A progress report's stateful operators, from the sources' end of the query on (Spark lists them from the
    sink back)."""
    return list(reversed(report.get("stateOperators", [])))


def batch_time(progress: list, stage_names: list, handlers: dict | None = None) -> dict:
    """Medians over a run's micro-batches (ms): each driver phase, and each stage's time on rows and commits, and
    in our handlers (`handler_ms`, of which `state_ms` in state-store calls) from `handlers`, `{batch id: {stage
    name: {"ms", "state_ms"}}}` (None where a stage's name is not its own, as the baseline's ingest operators
    share one); and our handlers' time summed over every batch of the run, a resumed run's earlier batches included
    (`handler_total_ms`, `state_total_ms`), as a stage's work can come in bursts that its median batch does not show.

    The first micro-batch, which also plans the query and starts its Python
    workers, is left out of the medians when there are others. If Spark
    reports another number of stateful operators than `stage_names`, they
    are numbered instead.

    >>> report = {"batchId": 4, "durationMs": {"triggerExecution": 900, "addBatch": 800},
    ...           "stateOperators": [{"allUpdatesTimeMs": 300, "commitTimeMs": 40, "numRowsUpdated": 7},
    ...                              {"allUpdatesTimeMs": 100, "commitTimeMs": 20, "numRowsUpdated": 3}]}
    >>> timing = batch_time([report], ["0: ingest", "1: count"], {4: {"0: ingest": {"ms": 70, "state_ms": 9}}})
    >>> timing["driver_ms"]["addBatch"], timing["stages"][0]["handler_ms"], timing["stages"][0]["handler_total_ms"]
    (800, 70, 70)
    >>> {key: timing["stages"][0][key] for key in ("stage", "rows_ms", "commit_ms", "rows_updated", "state_ms")}
    {'stage': '0: ingest', 'rows_ms': 100, 'commit_ms': 20, 'rows_updated': 3, 'state_ms': 9}
    """
    reports = [report for report in progress if "durationMs" in report]
    if len(reports) > 1:
        reports = reports[1:]
    driver = {phase: _median([report["durationMs"].get(phase, 0) for report in reports]) for phase in DRIVER_PHASES}
    operators = [stateful_operators(report) for report in reports]
    found = max(map(len, operators), default=0)
    names = stage_names if len(stage_names) == found else [f"stateful operator {index + 1}" for index in range(found)]

    handlers = handlers or {}

    def median_of(index, metric):
        return _median([stage[index].get(metric, 0) for stage in operators if index < len(stage)])

    measured = {report.get("batchId") for report in reports}

    def handler_times(name) -> dict:
        """The stage's handler times at the median measured batch and summed over every batch."""
        if names.count(name) != 1:
            return dict.fromkeys(("handler_ms", "state_ms", "handler_total_ms", "state_total_ms"))
        per_batch = {batch: stages[name] for batch, stages in handlers.items() if name in stages}
        at_median = [took for batch, took in per_batch.items() if batch in measured]
        return {"handler_ms": _median([took["ms"] for took in at_median]),
                "state_ms": _median([took["state_ms"] for took in at_median]),
                "handler_total_ms": sum(took["ms"] for took in per_batch.values()),
                "state_total_ms": sum(took["state_ms"] for took in per_batch.values())}

    stages = [{"stage": name, "rows_ms": median_of(index, "allUpdatesTimeMs"),
               "commit_ms": median_of(index, "commitTimeMs"), "rows_updated": median_of(index, "numRowsUpdated"),
               **handler_times(name)}
              for index, name in enumerate(names)]
    return {"batches": len(reports), "driver_ms": driver, "stages": stages}


def _median(values: list):
    return statistics.median(values) if values else None
