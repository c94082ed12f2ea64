"""Items as rows of one fixed schema, the form in which they travel between Spark operators."""
import math
import zlib

import msgpack
import pandas as pd

from flamespark.codec import unpack
from flamespark.items import Item, Meta

ROW_SCHEMA = (
    "kind STRING, target STRING, shard INT, ts LONG, meta BINARY, payload BINARY, "
    "tombstone BOOLEAN, arrival DOUBLE, seq LONG"
)
COLUMNS = ["kind", "target", "shard", "ts", "meta", "payload", "tombstone", "arrival", "seq"]

# Row kinds: raw input from a source, its end, an item or tombstone on its way to `target`,
# a punctuation of source `target`, a released output of sink `target`, a dead letter, a metric.
EVENT, END, ITEM, PUNCT, OUT, LATE, METRIC = "event", "end", "item", "punct", "out", "late", "metric"

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


def item_row(kind: str, target: str, shard: int, item: Item) -> tuple:
    return (kind, target, shard, item.meta.ts, pack_meta(item.meta), item.data, item.tombstone, item.arrival, 0)


def row_item(row) -> Item:
    """The item a row carries (`row` has the schema's fields as attributes)."""
    meta = Meta.load(msgpack.unpackb(row.meta))
    return Item(meta, unpack(row.payload), row.payload, bool(row.tombstone), float(row.arrival))


def control_row(kind: str, target: str, shard: int = 0, ts: int = 0, payload: bytes = b"", seq: int = 0) -> tuple:
    return (kind, target, shard, ts, b"", payload, False, 0.0, seq)


def frame(rows: list) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLUMNS)


def concat(frames) -> pd.DataFrame:
    frames = list(frames)
    return pd.concat(frames, ignore_index=True) if frames else frame([])
