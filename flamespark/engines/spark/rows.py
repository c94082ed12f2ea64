"""Items as rows of one fixed schema, the form in which they travel between Spark operators."""
import math
import zlib

import msgpack
import numpy as np
import pandas as pd

from flamespark.core.codec import unpack
from flamespark.core.items import Item, Meta
from flamespark.runtime.changes import Cause

ROW_SCHEMA = (
    "kind STRING, target STRING, shard INT, ts LONG, meta BINARY, payload BINARY, "
    "tombstone BOOLEAN, arrival DOUBLE, seq LONG, cause BINARY"
)
COLUMNS = ["kind", "target", "shard", "ts", "meta", "payload", "tombstone", "arrival", "seq", "cause"]

# Row kinds: raw input from a source, its end, an item or tombstone on its way to `target`,
# a punctuation of source `target`, a released output of sink `target`, a dead letter, a metric,
# a changelog entry of sink `target` (a retraction when `tombstone`).
EVENT, END, ITEM, PUNCT, OUT, LATE, METRIC, CHANGE = "event", "end", "item", "punct", "out", "late", "metric", "change"

# The buffered baseline adds a TIMESTAMP column for Spark's watermark: an item's event time
# plus 1 ms (Spark's watermark starts at the epoch and counts rows at or below it as late,
# which would drop events at ts 0), the far future for the punctuation that ends an input
# (so the watermark passes everything), and null for every other row (null neither moves
# the watermark nor counts as late). So `watermark - 1` is a time in `ts` units.
TIMED_SCHEMA = ROW_SCHEMA + ", event_time TIMESTAMP"
END_OF_TIME_MS = 9 * 10**12
EVENT_TIME_SHIFT_MS = 1

# Event times are LONG columns: +-2**62 stand for +-infinity.
INFINITY = 2**62


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


def item_row(kind: str, target: str, shard: int, item: Item, cause: bytes | None = None) -> tuple:
    """A row for `item`; `cause` is the packed changelog Cause of the event being delivered, if one is kept."""
    return (kind, target, shard, item.meta.ts, pack_meta(item.meta), item.data, item.tombstone, item.arrival, 0, cause)


def pack_cause(cause: Cause) -> bytes:
    return msgpack.packb(list(cause))


def unpack_cause(data: bytes) -> Cause:
    return Cause(*msgpack.unpackb(data))


def row_item(row) -> Item:
    """The item a row carries (`row` has the schema's fields as attributes)."""
    meta = Meta.load(msgpack.unpackb(row.meta))
    return Item(meta, unpack(row.payload), row.payload, bool(row.tombstone), float(row.arrival))


def control_row(kind: str, target: str, shard: int = 0, ts: int = 0, payload: bytes = b"", seq: int = 0) -> tuple:
    return (kind, target, shard, ts, b"", payload, False, 0.0, seq, None)


def frame(rows: list) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLUMNS)


def concat(frames) -> pd.DataFrame:
    frames = list(frames)
    return pd.concat(frames, ignore_index=True) if frames else frame([])


def with_event_time(rows: pd.DataFrame, released_at=None) -> pd.DataFrame:
    """`rows` with the `event_time` column of TIMED_SCHEMA, computed from kind and ts.

    Spark refuses rows a stateful operator emits at or below the previous
    watermark, so items released at watermark `released_at` carry that time.
    """
    kind, ts = rows["kind"].to_numpy(), rows["ts"].to_numpy(dtype="float64")
    item_time = ts + EVENT_TIME_SHIFT_MS if released_at is None else np.maximum(ts + EVENT_TIME_SHIFT_MS, released_at)
    millis = np.where(kind == ITEM, item_time, np.where((kind == PUNCT) & (ts >= INFINITY), END_OF_TIME_MS, np.nan))
    return rows[COLUMNS].assign(event_time=pd.to_datetime(millis, unit="ms"))
