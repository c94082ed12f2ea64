"""Spark's own progress reports of a query, and where its time went."""
from __future__ import annotations

import json
import statistics
import threading
import time

from pyspark.sql.streaming import StreamingQueryListener

from flamespark.engines.spark.batch_time import stateful_operators

BATCH_PHASES = ("triggerExecution", "addBatch", "queryPlanning")


class QueryReportListener(StreamingQueryListener):
    """Keeps the progress reports of the next query named as expected, until it terminates.

    Listener callbacks run on a py4j thread, and an exception there never
    reaches us (Spark logs and drops it), hence the broad try blocks.
    """

    def __init__(self):
        self.lock = threading.Condition()
        self.name = None
        self.run_id = None
        self.reports = []
        self.done = False

    def expect(self, name: str):
        with self.lock:
            self.name, self.run_id, self.reports, self.done = name, None, [], False

    def wait(self, timeout: float = 60.0) -> list:
        """The reports of the expected query, once it terminated (or after `timeout` s, what came)."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while not self.done and time.monotonic() < deadline:
                self.lock.wait(max(0.0, deadline - time.monotonic()))
            return sorted(self.reports, key=lambda report: report["batchId"])

    def onQueryStarted(self, event):
        try:
            with self.lock:
                if event.name == self.name and self.run_id is None:
                    self.run_id = str(event.runId)
        except Exception:  # noqa: BLE001 - see the class docstring
            pass

    def onQueryProgress(self, event):
        try:
            report = json.loads(event.progress.json)
            with self.lock:
                if report.get("runId") == self.run_id:
                    self.reports.append(report)
        except Exception:  # noqa: BLE001
            pass

    def onQueryIdle(self, event):
        pass

    def onQueryTerminated(self, event):
        try:
            with self.lock:
                if str(event.runId) == self.run_id:
                    self.done = True
                    self.lock.notify_all()
        except Exception:  # noqa: BLE001
            pass


def time_split(reports: list, operator_names: list) -> dict:
    """Totals over a run's micro-batches: driver-side phases and, per stateful operator, task time."""
    durations = {}
    for report in reports:
        for phase, ms in report.get("durationMs", {}).items():
            durations[phase] = durations.get(phase, 0) + ms
    found = max((len(report.get("stateOperators", [])) for report in reports), default=0)
    if found != len(operator_names):
        operator_names = [f"stateful {index + 1}" for index in range(found)]
    operators = []
    for index, name in enumerate(operator_names):
        totals = {"name": name, "update_ms": 0, "commit_ms": 0, "state_rows": 0}
        for report in reports:
            state = stateful_operators(report)
            if index < len(state):
                totals["update_ms"] += state[index].get("allUpdatesTimeMs", 0)
                totals["commit_ms"] += state[index].get("commitTimeMs", 0)
                totals["state_rows"] = state[index].get("numRowsTotal", 0)
        operators.append(totals)
    batch_ms = [report["durationMs"].get("triggerExecution", 0) for report in reports if "durationMs" in report]
    batches = [{
        "batch": report["batchId"],
        "rows": report.get("numInputRows"),
        "ms": {phase: report.get("durationMs", {}).get(phase, 0) for phase in BATCH_PHASES},
        "operators": [[state.get("allUpdatesTimeMs", 0), state.get("commitTimeMs", 0)]
                      for state in stateful_operators(report)],
    } for report in reports]
    return {
        "micro_batches": len(reports),
        "batch_ms": {"median": statistics.median(batch_ms) if batch_ms else None,
                     "max": max(batch_ms, default=None), "all": batch_ms},
        # The first micro-batch of a query also plans it and starts its Python runners and state stores.
        "first_batch_s": batch_ms[0] / 1000 if batch_ms else None,
        "later_batches_s": sum(batch_ms[1:]) / 1000,
        "phases_ms": durations,
        "stateful_operators": len(operator_names),
        "operators": operators,
        "batches": batches,
    }


def summarize(run_facts: dict, operator_names: list) -> dict:
    """A run's report entry: facts, events/s, and the time split instead of the raw reports."""
    facts = {key: value for key, value in run_facts.items() if key != "reports"}
    facts["events_per_s"] = facts["events"] / facts["wall_s"] if facts["wall_s"] > 0 else None
    facts["time"] = time_split(run_facts["reports"], operator_names)
    return facts
