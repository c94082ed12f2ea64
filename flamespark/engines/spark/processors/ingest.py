"""Stage 0: events in, in arrival order; items with meta, late events, and each source's punctuations out."""
import time

from flamespark.core.codec import pack, unpack
from flamespark.engines.spark.processors.blob import BlobProcessor, metric_row, punctuation_rows
from flamespark.engines.spark.rows import END, LATE, Outbox, concat, control_row, frame, pack_cause
from flamespark.runtime.changes import Cause
from flamespark.runtime.heap import runs_with_collections_paused
from flamespark.runtime.progress import SourceProgress


def _batch_time_ms(timerValues) -> int:
    """The micro-batch's processing time, which Spark keeps in its offset log, so a rerun batch sees the same."""
    now = timerValues.getCurrentProcessingTimeInMs()
    return now if now > 0 else int(time.time() * 1000)


class IngestProcessor(BlobProcessor):
    """Stage 0, one group per ingest partition of `sources`: its SourceProgress, kept in the state store,
    and the stateless operators.

    Raw rows carry their ingest partition in the `shard` column (a source's
    events are spread over its `topology.partitions` by position), so each
    group sees one part of the sources it takes: it judges lateness by that
    part's punctuation alone, and passes that punctuation on as rows whose
    `seq` is the partition; downstream stages take a source's punctuation as
    the minimum over its partitions (stage.Horizons).
    A source's part ends at its end row (every partition gets one), or once
    it has delivered `expected[source]` events (a directory, read in one
    partition up to the files it held at the start). With `idle_timeout` (seconds), a
    source that has delivered nothing to the partition for that long, by the
    micro-batches' times, stops holding the others back there. Each
    punctuation advances after the batch, and is passed on only when it rose.
    With `changes`, each item carries its event as the changelog's cause.
    """

    def __init__(self, topology, sources: list, reorder_latency: int, late: str, expected: dict | None = None,
                 idle_timeout: float | None = None, changes: bool = False):
        self.topology = topology
        self.sources = sources
        self.reorder_latency = reorder_latency
        self.late = late
        self.expected = expected or {}
        self.idle_timeout = idle_timeout
        self.changes = changes

    @runs_with_collections_paused
    def handleInputRows(self, key, rows, timerValues):
        partition = self.topology.ingest_keys.index(key[0])
        now = _batch_time_ms(timerValues)
        sources = [source for source in self.sources if partition < self.topology.partitions[source]]
        progress = SourceProgress(sources, self.reorder_latency, self.late, self.expected, self.idle_timeout,
                                  clock_ms=lambda: now, partition=partition,
                                  partitions=max(self.topology.partitions.values()))
        snapshot = self.load(None)
        if snapshot is not None:
            progress.restore(snapshot)
        outbox = Outbox()
        for row in concat(rows).sort_values("seq", kind="stable").itertuples(index=False):
            if row.kind == END:
                progress.end(row.target)
                continue
            item = progress.admit(row.target, row.ts, unpack(row.payload), row.arrival)
            if item is not None:
                cause = self._cause(progress, row) if self.changes else None
                self.topology.send(outbox, row.target, item, cause)
        out = outbox.rows()
        advanced = {(source, partition): time for source, time in progress.advance().items()}
        out.extend(punctuation_rows(advanced, self.topology.shard_keys))
        for source in sources:
            out.extend(control_row(LATE, source, payload=pack(dead))
                       for dead in progress.dead_letters if dead["source"] == source)
            out.append(metric_row("ingest", partition, dict(progress.counts(source), source=source)))
        self.save(progress.snapshot())
        yield frame(out)

    def _cause(self, progress, row) -> bytes:
        """The event of `row`, packed as the changelog names it: a source spread over partitions carries its
        position in `seq`; one in a single partition is counted here, in arrival order."""
        source = row.target
        position = row.seq if self.topology.partitions[source] > 1 else progress.received(source) - 1
        return pack_cause(Cause(source, row.ts, position))
