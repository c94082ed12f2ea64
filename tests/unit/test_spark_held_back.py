"""What an optimistic Spark stage holds back (`processors.held_back.HeldBack`), over random batches: every item is
applied exactly once; nothing is held at or below the punctuation (the barrier releases up to it); a batch behind
applies nothing above it; one that is not applies the earliest items, at most twice as many as it brings beyond
what is final, and everything when nothing was held back."""
import math

import msgpack
from hypothesis import given
from hypothesis import strategies as st

from flamespark.core.batch import Batch
from flamespark.core.codec import pack
from flamespark.core.items import Meta
from flamespark.engines.spark.processors.held_back import HeldBack


class Chunks(dict):
    """What a map state offers `held.TimedRecords`."""

    def getValue(self, key):
        return self[key]

    def updateValue(self, key, value):
        self[key] = value

    def removeKey(self, key):
        del self[key]


def held_times(chunks) -> list:
    return [record[1][0] for (packed,) in chunks.values() for record in msgpack.unpackb(packed)]


# Per batch: its items' event times, whether it is behind, and how far the punctuation rises.
batches = st.lists(st.tuples(st.lists(st.integers(0, 60), max_size=12), st.booleans(), st.integers(0, 8)),
                   max_size=8)


@given(batches=batches)
def test_every_item_is_applied_once_and_nothing_final_is_held(batches):
    chunks, index, punctuation = Chunks(), None, -1
    arrived, applied = [], []
    for number, (times, behind, rise) in enumerate([*batches, ([], False, math.inf)]):  # the last ends the input
        punctuation += rise
        rows = Batch([Meta(ts, "s", len(arrived) + at, (number, at)) for at, ts in enumerate(times)],
                     [None] * len(times), [pack([number, at]) for at in range(len(times))], [1] * len(times),
                     [0.0] * len(times))
        arrived += [(number, at) for at in range(len(times))]
        held = HeldBack(chunks, index)
        before = len(held)
        ready = held.sort_out({"count": (rows, None)} if times else {}, behind, punctuation)
        index = held.index
        ready_rows = [batch for batch, _ in ready.values()]
        applied += [tuple(payload) for batch in ready_rows for payload in batch.payloads]  # decoded
        waiting = held_times(chunks)
        applied_times = [meta.ts for batch in ready_rows for meta in batch.metas]
        assert len(held) == len(waiting) == before + len(times) - len(applied_times)
        assert all(ts > punctuation for ts in waiting)
        if behind:
            assert all(ts <= punctuation for ts in applied_times)
        else:
            assert len([ts for ts in applied_times if ts > punctuation]) <= 2 * len(times)
            assert not waiting or not applied_times or max(applied_times) <= min(waiting)
            if before == 0:
                assert len(applied_times) == len(times)
    assert sorted(applied) == sorted(arrived)
    assert not chunks
