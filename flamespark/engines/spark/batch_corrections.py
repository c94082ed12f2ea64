"""The corrections of a Spark run with several reorder latencies, made on the driver micro-batch by micro-batch.

Each level's copy of the graph releases at its own punctuation in the
stages (see spark.levels); the driver compares the levels' releases as the
local engine does (`runtime.corrections.Corrections`), and a batch's
corrections leave with it. What the comparison holds between batches (a
level's releases that the next level's punctuation has not passed yet, the
late events that may name a cause) is a function of the batches before: a
batch run again after a restart finds it rebuilt from their batch files,
and corrects exactly as it did the first time.

A correction's cause is the latest of its level's late events to arrive at
or before its time: the stages do not tell the driver which event touched
which output.
"""
import math

from flamespark.core.codec import pack, unpack
from flamespark.core.items import Item
from flamespark.engines.spark.rows import decode_time, encode_time
from flamespark.runtime.changes import Cause
from flamespark.runtime.corrections import Corrections, summarised


class BatchCorrections:
    """The corrections of a run with `levels` (a `spark.levels.Levels`), batch by batch; `earlier_parts()` gives
    the batch files written so far, from which a restart rebuilds the comparison."""

    def __init__(self, levels, earlier_parts):
        self.levels = levels
        self._earlier_parts = earlier_parts
        self._corrections = None
        self._times = None
        self._next_batch = None  # the batch the comparison stands before

    def step(self, batch_id: int, released: list, ingest: list, barrier: list, released_at: float) -> dict:
        """What batch `batch_id` keeps in its batch file for the corrections, its `levelled` entry: each level's
        punctuation (`times`), every level's releases, the events it ingested per first level (`by_level`), the
        later levels' events among them (`late`), and its `corrections` as `[sink, record, latency in ms]`,
        each record's payload encoded (`stored`: a batch file would turn a tuple into a list).

        `released` are its OUT records (sinks of the copies), `ingest` and
        `barrier` its metric payloads of those kinds, decoded."""
        if batch_id != self._next_batch:
            self._rebuild(batch_id)
        times = list(self._times)
        for values in barrier:
            level = values["level"]
            times[level - 1] = max(times[level - 1], decode_time(values["horizon"]))
        levels = self.levels
        entry = {
            "times": [encode_time(time) for time in times],
            "released": [[levels.level_of(sink), levels.sink_of(sink), meta, data, arrival]
                         for sink, meta, data, _, arrival, _ in released],
            "by_level": [values["by_level"] for values in ingest],
            "late": [event for values in ingest for event in values["late"]],
        }
        entry["corrections"] = self._apply(entry, released_at)
        self._next_batch = batch_id + 1
        return entry

    def _rebuild(self, batch_id: int):
        """Start the comparison afresh and replay into it the batch files before `batch_id`."""
        self._corrections = Corrections(self.levels.sinks, self.levels.count)
        self._times = [-math.inf] * self.levels.count
        for part in self._earlier_parts():
            if part["batch"] < batch_id:
                self._apply(part["levelled"], part["released_at"])

    def _apply(self, entry: dict, released_at: float) -> list:
        """Compare the levels' releases of one batch's `entry`; returns its corrections."""
        corrections = self._corrections
        for level, *cause in entry["late"]:
            corrections.arrived(Cause(*cause), level)
        by_level = [[] for _ in self.levels.levels]
        for level, sink, meta, data, arrival in entry["released"]:
            by_level[level - 1].append(Item(tuple(meta), None, data, False, arrival, sink))
        self._times = [decode_time(time) for time in entry["times"]]
        for level, (items, time) in enumerate(zip(by_level, self._times), 1):
            items.sort(key=_meta)
            corrections.released(level, time, items, released_at)
        return [[sink, dict(record, payload=pack(record["payload"])), latency]
                for sink, record, latency in corrections.take()]


def stored(entry: dict) -> list:
    """The corrections of a batch file's `levelled` entry, as `[sink, record, latency in ms]`, payloads decoded."""
    return [[sink, dict(record, payload=unpack(record["payload"])), latency]
            for sink, record, latency in entry["corrections"]]


def _meta(item):
    return item.meta


def records_and_summary(parts, levels, output_latencies: list) -> tuple:
    """The run's corrections `{sink: [record]}` from its batch files, in the order they were made, and the
    summary of its levels (`runtime.corrections.summarised`)."""
    events = [sum(counts[level - 1] for part in parts for counts in part["levelled"]["by_level"])
              for level in levels.levels]
    made = (entry for part in parts for entry in stored(part["levelled"]))
    return summarised(made, levels.sinks, levels.latencies, output_latencies, events)
