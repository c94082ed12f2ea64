"""Items as rows of one fixed schema, the form in which they travel between Spark operators."""
import math
import zlib

import msgpack
import numpy as np
import pandas as pd

from flamespark.core.codec import unpack
from flamespark.core.items import Item, Meta, new_meta
from flamespark.runtime.changes import Cause

ROW_SCHEMA = (
    "kind STRING, target STRING, shard INT, ts LONG, meta BINARY, payload BINARY, "
    "tombstone BOOLEAN, arrival DOUBLE, seq LONG, cause BINARY"
)
COLUMNS = ["kind", "target", "shard", "ts", "meta", "payload", "tombstone", "arrival", "seq", "cause"]

# Row kinds: raw input from a source, its end, a bundle of items and tombstones on their way to stage
# `seq`, a punctuation of source `target`, a bundle of released outputs, a dead letter, a metric,
# a bundle of changelog entries (a retraction is a tombstone), a note that the batch is behind its input.
EVENT, END, ITEMS, PUNCT, OUT, LATE, METRIC, CHANGE = "event", "end", "items", "punct", "out", "late", "metric", "change"
BEHIND = "behind"

# The buffered baseline adds a TIMESTAMP column for Spark's watermark: an item's event time
# plus a shift (`shift`, below: the last reorder latency plus 1 ms), the far future for the
# punctuation that ends an input (so the watermark passes everything), and null for every
# other row (null neither moves the watermark nor counts as late). Spark's watermark starts at
# the epoch, never goes below it, and counts rows at or below it as late: with the shift, it is
# the newest event time seen, at or above the epoch for event times from 0 on, so that it is
# never held at the epoch while a level's punctuation rises (see spark.levels), and no event at
# ts 0 is late. `watermark - shift` is then the last level's punctuation in `ts` units.
TIMED_SCHEMA = ROW_SCHEMA + ", event_time TIMESTAMP"
END_OF_TIME_MS = 9 * 10**12


def event_time_shift(latencies: tuple) -> int:
    """What the buffered baseline adds to an item's event time for Spark's watermark, given the reorder
    latencies (see TIMED_SCHEMA)."""
    return latencies[-1] + 1


# Event times are LONG columns: +-2**62 stand for +-infinity.
INFINITY = 2**62
_NAT = np.iinfo(np.int64).min  # numpy's not-a-time, as an int64


def encode_time(time) -> int:
    if time == math.inf:
        return INFINITY
    if time == -math.inf:
        return -INFINITY
    return int(time)


def decode_time(value: int):
    if value >= INFINITY:
        return math.inf
    if value <= -INFINITY:
        return -math.inf
    return value


def shard_of(data: bytes, shards: int) -> int:
    return zlib.crc32(data) % shards


def pack_meta(meta: Meta) -> bytes:
    return msgpack.packb(meta.dump())


class Outbox:
    """Items bound for shards, as bundle rows: one row per kind, stage and shard, whatever their number.

    A row per item would cost Arrow, pandas and Spark's shuffle a row each;
    a bundle's records are packed and read by msgpack in C, and a stage
    passes on the bundles bound for later stages without reading them.
    A record is `[target, meta, data, tombstone, arrival, cause]`, where
    `cause` is the packed changelog Cause of the event being delivered, if
    one is kept. A bundle's `ts` is its latest record's event time, which
    is what Spark's watermark needs from it.
    """

    def __init__(self):
        self._bundles = {}

    def add(self, kind: str, stage: int, shard: int, target: str, item: Item, cause: bytes | None = None):
        records = self._bundles.get((kind, stage, shard))
        if records is None:
            records = self._bundles[(kind, stage, shard)] = []
        records.append((target, item.meta, item.data, item.tombstone, item.arrival, cause))

    def rows(self) -> list:
        """The bundle rows of what was added, which leaves the outbox empty."""
        rows = [
            (kind, "", shard, max(record[1][0] for record in records), b"", msgpack.packb(records), False, 0.0,
             stage, None)
            for (kind, stage, shard), records in self._bundles.items()
        ]
        self._bundles.clear()
        return rows


def bundle_tuples(data: bytes) -> tuple:
    """The records of a bundle row's payload as tuples (see Outbox), each meta a plain tuple, which orders as
    its `Meta` would: enough for what only sorts and stores records."""
    return msgpack.unpackb(data, use_list=False)


def bundle_records(data: bytes) -> list:
    """The records of a bundle row's payload, with their meta as a `Meta` (see Outbox)."""
    return [(target, new_meta(Meta, meta), *rest) for target, meta, *rest in bundle_tuples(data)]


def bundle_items(rows, decode=lambda target: True) -> list:
    """`(target, item, cause)` of every record in the bundle `rows`; an item's payload is decoded if
    `decode(target)`, else left None (what only passes to the barrier needs just its bytes)."""
    items = []
    for row in rows:
        for target, meta, data, tombstone, arrival, cause in bundle_records(row.payload):
            payload = unpack(data) if decode(target) else None
            items.append((target, Item(meta, payload, data, tombstone, arrival), cause))
    return items


def pack_cause(cause: Cause) -> bytes:
    return msgpack.packb(list(cause))


def unpack_cause(data: bytes) -> Cause:
    return Cause(*msgpack.unpackb(data))


def control_row(kind: str, target: str, shard: int = 0, ts: int = 0, payload: bytes = b"", seq: int = 0) -> tuple:
    return (kind, target, shard, ts, b"", payload, False, 0.0, seq, None)


def frame(rows: list) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLUMNS)


def concat(frames) -> pd.DataFrame:
    frames = list(frames)
    return pd.concat(frames, ignore_index=True) if frames else frame([])


def with_event_time(rows: pd.DataFrame, shift: int, released_at=None) -> pd.DataFrame:
    """`rows` with the `event_time` column of TIMED_SCHEMA, computed from kind and ts.

    Spark refuses rows a stateful operator emits at or below the previous
    watermark, so items released at watermark `released_at` carry that time.
    The times are whole milliseconds and stay integers: from floats, pandas
    rounds them under numpy's overflow checks, which once raised an overflow
    in a Spark worker on times far from any limit.
    """
    kind, ts = rows["kind"].to_numpy(), rows["ts"].to_numpy(dtype="int64")
    item_time = ts + shift if released_at is None else np.maximum(ts + shift, released_at)
    millis = np.where(kind == ITEMS, item_time, np.where((kind == PUNCT) & (ts >= INFINITY), END_OF_TIME_MS, _NAT))
    nanos = np.where(millis == _NAT, _NAT, millis * 1_000_000)
    return rows[COLUMNS].assign(event_time=nanos.view("datetime64[ns]"))
