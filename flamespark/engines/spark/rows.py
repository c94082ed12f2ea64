"""Batches as rows of one fixed schema, the form in which they travel between Spark operators: each kind, stage and
shard's rows as one bundle row (`Outbox`), and control rows (punctuations, ends, metrics, ...)."""
import math

import msgpack
import numpy as np
import pandas as pd

from flamespark.core.batch import Batch
from flamespark.core.items import Meta, new_meta
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


class Outbox:
    """Batches bound for shards, as bundle rows: one row per kind, stage and shard, whatever their number.

    A row per item would cost Arrow, pandas and Spark's shuffle a row each;
    a bundle's columns are packed and read by msgpack in C, and a stage
    passes on the bundles bound for later stages without reading them.
    A bundle holds, per target, the columns of its batch: metas, encoded
    payloads, weights, arrivals, causes (the changelog's causes, where one
    is kept, else None) and keys (the encoding of each row's key for its
    target's keyed operator, made once by the stage that sends it, else
    None). A bundle's `ts` is its latest row's event time, which is what
    Spark's watermark needs from it.
    """

    def __init__(self):
        self._bundles = {}

    def add(self, kind: str, stage: int, shard: int, target: str, batch: Batch, keys: list | None = None):
        """Add `batch`'s rows for `target` (with their key encodings, if given) to the bundle of `kind`, `stage`
        and `shard`."""
        targets = self._bundles.get((kind, stage, shard))
        if targets is None:
            targets = self._bundles[(kind, stage, shard)] = {}
        columns = targets.get(target)
        if columns is None:
            targets[target] = columns = [[], [], [], [], [], []]
        columns[0] += batch.metas
        columns[1] += batch.datas
        columns[2] += batch.weights
        columns[3] += batch.arrivals
        columns[4] += batch.row_causes()
        columns[5] += keys if keys is not None else [None] * len(batch)

    def rows(self) -> list:
        """The bundle rows of what was added, which leaves the outbox empty."""
        rows = [
            (kind, "", shard, max(meta[0] for columns in targets.values() for meta in columns[0]), b"",
             msgpack.packb([[target, *columns] for target, columns in targets.items()]), False, 0.0, stage, None)
            for (kind, stage, shard), targets in self._bundles.items()
        ]
        self._bundles.clear()
        return rows


def bundle_columns(data: bytes) -> list:
    """A bundle row's payload: per target, `(target, metas, datas, weights, arrivals, causes, keys)`, each meta a
    plain tuple (which orders as its `Meta` would: enough for what only sorts and stores rows)."""
    return msgpack.unpackb(data, use_list=False)


def bundle_batches(rows) -> dict:
    """`{target: (batch, keys)}` of the bundle `rows`: each target's rows as one batch (with their causes, if the
    bundles carry them) and their key encodings (None where the sender gave none). The payloads are left None:
    a stage decodes only the rows it applies (`held_back.HeldBack`), and what passes to the barrier or waits in
    a buffer needs just its bytes."""
    parts = {}
    for row in rows:
        for target, metas, datas, weights, arrivals, causes, keys in bundle_columns(row.payload):
            parts.setdefault(target, []).append((metas, datas, weights, arrivals, causes, keys))
    batches = {}
    for target, columns in parts.items():
        metas, datas, weights, arrivals, causes, keys = (
            list(column[0]) if len(column) == 1 else [value for part in column for value in part]
            for column in zip(*columns))
        carried = None
        if any(cause is not None for cause in causes):
            carried = [None if cause is None else Cause(*cause) for cause in causes]
        batch = Batch(list(map(new_meta, [Meta] * len(metas), metas)), [None] * len(datas), datas, weights, arrivals,
                      carried)
        batches[target] = (batch, None if None in keys else keys)
    return batches


def bundle_records(data: bytes):
    """The rows of a bundle row's payload as records `(target, meta, data, weight, arrival, cause)`, each meta a
    plain tuple and each cause a list or None."""
    for target, metas, datas, weights, arrivals, causes, _ in bundle_columns(data):
        yield from zip([target] * len(metas), metas, datas, weights, arrivals, causes)


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
