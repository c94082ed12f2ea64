"""What an optimistic stage holds back while its run is behind its input, in Spark's state store.

Applied on arrival, an event's early results come a batch after it, and a
late event replays what followed it. An engine that falls behind its input
gains little from that: its early results come late anyway, and the work
they cost (replays, and holding every result at the barrier until its
punctuation) makes it fall further behind. So a micro-batch that is behind
(the replay source judges it when it plans the batch and records it in the
batch's offsets, `replay.ReplayReader`, so that a batch run again after a
restart judges the same) applies, in meta order, only the items its
punctuation has made final, which nothing can precede any more, and holds
the others back here, to apply them in meta order with what follows: with
the items of the next batch that is not behind, or once a punctuation
reaches them. Those it applies as the buffered mode would, in order, and
their final results leave in the same batch, as they do on arrival.
"""
import math

from flamespark.core.codec import unpack
from flamespark.core.items import Item, Meta, new_meta
from flamespark.engines.spark.processors.held import TimedRecords


def _record_time(record) -> int:
    """A held record's event time, its meta's first field."""
    return record[1][0]


class HeldBack:
    """One shard's held-back items of a stage, as records `[target, meta, data, tombstone, arrival, cause]` (the
    bundles' records) in chunks of a map state (`held.chunk_map`); `index` is the chunks' index, which the caller
    keeps in the shard's value (None for none yet).

    >>> from flamespark.engines.spark.processors.held import CHUNK
    >>> class Chunks(dict):  # what a map state offers TimedRecords
    ...     def getValue(self, key): return self[key]
    ...     def updateValue(self, key, value): self[key] = value
    ...     def removeKey(self, key): del self[key]
    >>> held = HeldBack(Chunks(), None)
    >>> from flamespark.core.codec import pack
    >>> items = [("count", Item(Meta(ts, "docs", 0, (ts,)), None, pack(ts))) for ts in (9, 3, 5)]
    >>> [item.payload for _, item, _ in held.sort_out([(t, i, None) for t, i in items], behind=True, time=5)]
    [3, 5]
    >>> held.held_back, len(held)
    (1, 1)
    >>> [item.payload for _, item, _ in held.sort_out([], behind=False, time=5)], held.resumed, len(held)
    ([9], 1, 0)
    """

    def __init__(self, chunks, index):
        self.records = TimedRecords(chunks, index, _record_time)
        self.held_back = 0  # items of this batch set aside
        self.resumed = 0  # items set aside before that this batch applies

    def __len__(self):
        return len(self.records)

    @property
    def index(self):
        """The chunks' index, for the shard's value."""
        return self.records.index

    def sort_out(self, items: list, behind: bool, time) -> list:
        """Of the batch's `(target, item, cause)` triples and those held back before, the triples to apply now,
        their payloads decoded: when `behind`, those at or below the punctuation `time` (the others are held
        back, and only their bytes kept), else all. The batch's items may come with their payloads undecoded
        (None), so that those held back are decoded once, when applied."""
        due = time if behind else math.inf
        taken = self.records.take(due)
        ready = [_decoded(triple) for triple in items if triple[1].meta.ts <= due]
        waiting = [(target, item.meta, item.data, item.tombstone, item.arrival, cause)
                   for target, item, cause in items if item.meta.ts > due]
        self.held_back += len(waiting)
        for record in taken:
            if _record_time(record) <= due:
                ready.append(_triple(record))
                self.resumed += 1
            else:
                waiting.append(record)
        self.records.add(waiting)
        return ready


def _decoded(triple) -> tuple:
    """The triple with its item's payload decoded."""
    item = triple[1]
    if item.payload is None:
        item.payload = unpack(item.data)
    return triple


def _triple(record) -> tuple:
    """A held record as the `(target, item, cause)` triple it was, its payload decoded."""
    target, meta, data, tombstone, arrival, cause = record
    return target, Item(new_meta(Meta, meta), unpack(data), data, tombstone, arrival), cause
