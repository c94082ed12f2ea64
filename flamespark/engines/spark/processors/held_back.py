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

from flamespark.core.batch import Batch
from flamespark.core.codec import unpack
from flamespark.core.items import Meta, new_meta
from flamespark.engines.spark.processors.held import TimedRecords, meta_time
from flamespark.runtime.changes import Cause


class HeldBack:
    """One shard's held-back rows of a stage, as records `[target, meta, data, weight, arrival, cause, key]` in
    chunks of a map state (`held.chunk_map`); `index` is the chunks' index, which the caller keeps in the shard's
    value (None for none yet).

    >>> from flamespark.core.codec import pack
    >>> class Chunks(dict):  # what a map state offers TimedRecords
    ...     def getValue(self, key): return self[key]
    ...     def updateValue(self, key, value): self[key] = value
    ...     def removeKey(self, key): del self[key]
    >>> held = HeldBack(Chunks(), None)
    >>> def rows(*times):
    ...     metas = [Meta(ts, "docs", 0, (ts,)) for ts in times]
    ...     return {"count": (Batch(metas, [None] * len(times), [pack(ts) for ts in times], [1] * len(times),
    ...                             [0.0] * len(times)), None)}
    >>> def payloads(ready): return sorted(payload for batch, _ in ready.values() for payload in batch.payloads)
    >>> payloads(held.sort_out(rows(9, 3, 5, 8, 7, 6), behind=True, time=5))
    [3, 5]
    >>> held.held_back, len(held)
    (4, 4)

    Not behind, a batch of one row applies two, the earliest held back, and
    then one of two rows applies four:

    >>> payloads(held.sort_out(rows(10), behind=False, time=5)), held.resumed
    ([6, 7], 2)
    >>> payloads(held.sort_out(rows(12, 11), behind=False, time=5)), len(held)
    ([8, 9, 10, 11], 1)
    """

    def __init__(self, chunks, index):
        self.records = TimedRecords(chunks, index, meta_time)
        self.held_back = 0  # rows of this batch set aside
        self.resumed = 0  # rows set aside before that this batch applies

    def __len__(self):
        return len(self.records)

    @property
    def index(self):
        """The chunks' index, for the shard's value."""
        return self.records.index

    def sort_out(self, batches: dict, behind: bool, time) -> dict:
        """Of the batch's rows, `{target: (batch, keys)}`, and those held back before, the rows to apply now, by
        target in the same form, their payloads decoded: those at or below the punctuation `time` and, unless
        the batch is `behind`, the earliest of the others, up to twice as many as the batch brings in all (see
        the module's docstring). The others are held back, and only their bytes kept. The batch's rows may come
        with their payloads undecoded (None), so that those held back are decoded once, when applied."""
        records = [record for target, (batch, keys) in batches.items() for record in _records(target, batch, keys)]
        if not behind and not len(self.records):  # nothing held back: everything on arrival
            return _batches(records)
        brought = len(records)
        entries = [(record, False) for record in records]  # each with whether it was held back before
        entries += [(record, True) for record in self.records.take(time if behind else math.inf)]
        entries.sort(key=_entry_time)
        final = bisect_right(entries, time, key=_entry_time)
        count = final if behind else max(final, 2 * brought)
        self.resumed += sum(held for _, held in entries[:count])
        self.held_back += sum(not held for _, held in entries[count:])
        self.records.add([record for record, _ in entries[count:]])
        return _batches([record for record, _ in entries[:count]])


def _entry_time(entry) -> int:
    return entry[0][1][0]


def _records(target: str, batch, keys) -> list:
    """The rows of `target`'s `batch` as records (see HeldBack), with their key encodings if given."""
    keys = keys if keys is not None else [None] * len(batch)
    return [[target, meta, data, weight, arrival, cause, key] for meta, data, weight, arrival, cause, key
            in zip(batch.metas, batch.datas, batch.weights, batch.arrivals, batch.row_causes(), keys)]


def _batches(records: list) -> dict:
    """`{target: (batch, keys)}` of records, their payloads decoded, their keys None unless every one has one."""
    columns = {}
    for target, meta, data, weight, arrival, cause, key in records:
        rows = columns.get(target)
        if rows is None:
            rows = columns[target] = [[], [], [], [], [], []]
        rows[0].append(new_meta(Meta, meta))
        rows[1].append(data)
        rows[2].append(weight)
        rows[3].append(arrival)
        rows[4].append(None if cause is None else Cause(*cause))
        rows[5].append(key)
    batches = {}
    for target, (metas, datas, weights, arrivals, causes, keys) in columns.items():
        carried = causes if any(cause is not None for cause in causes) else None
        batch = Batch(metas, list(map(unpack, datas)), datas, weights, arrivals, carried)
        batches[target] = (batch, None if None in keys else keys)
    return batches
