"""Stage 0: events in, in arrival order; items with meta, late events, and each source's punctuations out."""
import time

from flamespark.core.codec import pack, unpack
from flamespark.engines.spark.processors.blob import BlobProcessor, metric_row, punctuation_rows
from flamespark.engines.spark.rows import END, LATE, concat, control_row, frame, pack_cause
from flamespark.runtime.changes import Cause
from flamespark.runtime.progress import SourceProgress


def _batch_time_ms(timerValues) -> int:
    """The micro-batch's processing time, which Spark keeps in its offset log, so a rerun batch sees the same."""
    now = timerValues.getCurrentProcessingTimeInMs()
    return now if now > 0 else int(time.time() * 1000)


class IngestProcessor(BlobProcessor):
    """Stage 0, one group for `sources`: their SourceProgress, kept in the state store, and the stateless operators.

    A source ends at its end row, or once it has delivered `expected[source]`
    events (a directory read up to the files it held at the start). With
    `idle_timeout` (seconds), a source that has delivered nothing for that
    long, by the micro-batches' times, stops holding the others back. Each
    source's punctuation advances after the batch, and is passed on only
    when it rose. With `changes`, each item row carries its event as the
    changelog's cause.
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

    def handleInputRows(self, key, rows, timerValues):
        now = _batch_time_ms(timerValues)
        progress = SourceProgress(self.sources, self.reorder_latency, self.late, self.expected, self.idle_timeout,
                                  clock_ms=lambda: now)
        snapshot = self.load(None)
        if snapshot is not None:
            progress.restore(snapshot)
        out = []
        for row in concat(rows).sort_values("seq", kind="stable").itertuples(index=False):
            if row.kind == END:
                progress.end(row.target)
                continue
            item = progress.admit(row.target, row.ts, unpack(row.payload), row.arrival)
            if item is not None:
                cause = None
                if self.changes:
                    cause = pack_cause(Cause(row.target, row.ts, progress.received(row.target) - 1))
                out.extend(self.topology.rows_after(row.target, item, cause))
        out.extend(punctuation_rows(progress.advance(), self.topology.shards))
        for source in self.sources:
            out.extend(control_row(LATE, source, payload=pack(dead))
                       for dead in progress.dead_letters if dead["source"] == source)
            out.append(metric_row("ingest", 0, dict(progress.counts(source), source=source)))
        self.save(progress.snapshot())
        yield frame(out)
