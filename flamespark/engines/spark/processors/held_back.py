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
the others back here, to apply them in meta order with what follows: once a
punctuation reaches them, or in the batches that are not behind. Those it
applies as the buffered mode would, in order, and their final results leave
in the same batch, as they do on arrival.

A batch that is not behind resumes what was held back a part at a time:
besides what is final, it applies, in meta order, as many items as it
brings and as many again. All at once, they would make one long batch (a
run holds back about the reorder latency's worth of input), whose final
results would leave late, and after which the run would be behind again;
so what is held back drains at a batch's worth a batch, much as the local
engine applies it in its time to spare.
"""
import math
from bisect import bisect_right
from operator import itemgetter

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
    >>> def items(*times): return [("count", Item(Meta(ts, "docs", 0, (ts,)), None, pack(ts)), None) for ts in times]
    >>> [item.payload for _, item, _ in held.sort_out(items(9, 3, 5, 8, 7, 6), behind=True, time=5)]
    [3, 5]
    >>> held.held_back, len(held)
    (4, 4)

    Not behind, a batch of one item applies two items, the earliest held
    back, and then one of two items applies four:

    >>> sorted(item.payload for _, item, _ in held.sort_out(items(10), behind=False, time=5)), held.resumed
    ([6, 7], 2)
    >>> sorted(item.payload for _, item, _ in held.sort_out(items(12, 11), behind=False, time=5)), len(held)
    ([8, 9, 10, 11], 1)
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
        their payloads decoded: those at or below the punctuation `time` and, unless the batch is `behind`, the
        earliest of the others, up to twice as many as the batch brings in all (see the module's docstring).
        The others are held back, and only their bytes kept. The batch's items may come with their payloads
        undecoded (None), so that those held back are decoded once, when applied."""
        if not behind and not len(self.records):  # nothing held back: everything on arrival
            return [_decoded(triple) for triple in items]
        # Each entry is (event time, whether held back before, the triple or the held record).
        entries = [(triple[1].meta.ts, False, triple) for triple in items]
        taken = self.records.take(time if behind else math.inf)
        entries += [(_record_time(record), True, record) for record in taken]
        entries.sort(key=itemgetter(0))
        final = bisect_right(entries, time, key=itemgetter(0))
        count = final if behind else max(final, 2 * len(items))
        ready, waiting = [], []
        for _, held, entry in entries[:count]:
            ready.append(_triple(entry) if held else _decoded(entry))
            if held:
                self.resumed += 1
        for _, held, entry in entries[count:]:
            waiting.append(entry if held else _record(entry))
            if not held:
                self.held_back += 1
        self.records.add(waiting)
        return ready


def _decoded(triple) -> tuple:
    """The triple with its item's payload decoded."""
    item = triple[1]
    if item.payload is None:
        item.payload = unpack(item.data)
    return triple


def _record(triple) -> tuple:
    """A triple as the record it is held back as, its payload's bytes only."""
    target, item, cause = triple
    return target, item.meta, item.data, item.tombstone, item.arrival, cause


def _triple(record) -> tuple:
    """A held record as the `(target, item, cause)` triple it was, its payload decoded."""
    target, meta, data, tombstone, arrival, cause = record
    return target, Item(new_meta(Meta, meta), unpack(data), data, tombstone, arrival), cause
