"""Ingest of DataFrame inputs: each part of a micro-batch judged on its own, from what earlier batches left.

A part is an input partition's rows of one file (all its rows, for a source
of no files: see `flamespark.spark.events`). A Spark input partition is no
lasting thing: the file source cuts each micro-batch's files into
partitions of its own, and a batch may have fewer partitions than the one
before. So lateness cannot be kept per partition from batch to batch (a
partition that no later batch has would hold its source back for ever); it
is kept per source, and each part of a batch takes it up: an event is late
when its time is at or below the punctuation that the newest event before
it supports, *before it* meaning earlier in its part of the same
micro-batch, or in any earlier micro-batch. After the batch, the source's
newest event is the newest over all its parts, and its punctuation follows
from it. An event admitted is never at or below a punctuation already
issued, so the outputs are exact; which events are late depends on the rows
of each part of each batch, which Spark's offset log makes the same when a
batch runs again after a restart. The parts' events are numbered (their
positions, which tell identical events apart) in the order of their files'
names, then partitions.

One group per source (its rows carry the source's key in `shard`) keeps
its state: events received (which numbers each event's position) and the
newest event time; and the claim of the plan it belongs to, so that a
checkpoint resumed by another graph or other options fails at once.
"""
from __future__ import annotations

from flamespark.core.errors import OptionError
from flamespark.engines.spark.processors.blob import BlobProcessor, handler
from flamespark.engines.spark.processors.ingest import Arrived, IngestProcessor, ingest_events
from flamespark.engines.spark.rows import EVENT, concat, frame
from flamespark.engines.spark.topology import INGEST_STAGE
from flamespark.runtime.punctuations import Punctuations

_EVENT_COLUMNS = ("kind", "target", "ts", "payload", "arrival", "seq")


class PartitionIngest(BlobProcessor):
    """Stage 0 for DataFrame inputs: `sources`' events, one group per source, each part of a batch ingested on
    its own (see the module's docstring) by `ingest_events`, after checking that the group's
    state was written under `claim`."""

    stage_name = INGEST_STAGE

    def __init__(self, topology, sources: list, reorder_latency: int, late: str, changes: bool, claim: str):
        self.topology = topology
        self.sources = sources
        self.reorder_latency = reorder_latency
        self.late = late
        self.changes = changes
        self.claim = claim

    metric_shard = IngestProcessor.metric_shard

    @handler
    def handleInputRows(self, key, rows, timerValues):
        state = self.load(None) or {"claim": self.claim, "sources": {}}
        if state["claim"] != self.claim:
            raise OptionError(
                "this query's checkpoint was written by a FlameSpark query with another graph, mode, reorder "
                "latency, late policy, changelog, shard count or input columns: start it with what it was "
                "started with, or give it a new checkpointLocation"
            )
        # Each part's rows in their order, parts by file and partition; an input's end (its `meta` sorts last) after
        # them all.
        batch = concat(rows).sort_values(["target", "meta", "seq"], kind="stable")
        out = []
        for source, events in batch.groupby("target", sort=False):
            known = state["sources"].setdefault(source, {"received": 0, "latest": None})
            out += self._ingest(source, events, known)
        self.save(state)
        yield frame(out)

    def _ingest(self, source: str, events, known: dict) -> list:
        """The rows that the source's `events` of a batch make, part by part, each taking up the source
        where `known` (received, latest) left it before the batch; `known` is then the source after it."""
        received, latest = known["received"], known["latest"]
        out = []
        for _, part in events.groupby("meta", sort=False):
            punctuations = Punctuations([source], self.reorder_latency, self.late)
            punctuations.resume(source, received, latest)
            rows = zip(*(part[column].tolist() for column in _EVENT_COLUMNS))
            # Every part says where its own punctuation rose; the stages keep the highest, the source's.
            out += ingest_events(punctuations, Arrived.of_rows(rows, self.topology, {}), self.topology, 0, [source],
                                 self.changes)
            received += int((part["kind"] == EVENT).sum())
        times = events.loc[events["kind"] == EVENT, "ts"]
        # A late event is never the newest: the newest over all events is the newest over the admitted ones.
        if len(times):
            newest = int(times.max())
            known["latest"] = newest if latest is None else max(latest, newest)
        known["received"] = received
        return out
