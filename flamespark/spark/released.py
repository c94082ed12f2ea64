"""The rows the barrier's stages release, as the rows of the user's output DataFrame.

Each row is one of:

- `kind = "out"`: an output the barrier released for good: its `sink`, its
  event time `ts`, its payload as JSON (`payload`), and `order_key`;
- `kind = "change"` (with `changes`): a changelog record, `op` "+" or "-",
  `cause` naming the event that made a "-" (JSON, else null);
- `kind = "late"`: a dead letter (late policy "drop"): `sink` null, `ts` the
  event's time, `payload` the JSON of `{"source", "ts", "payload",
  "punctuation"}`, as `Result.late` holds it.

`order_key` is binary and sorts as the barrier orders its items: by meta
(event time, source, tie-break, path), then payload. So a micro-batch's
outputs sorted by it come in release order, and since a batch releases only
what is later than the batch before released, outputs of all batches sorted
by it come in the order of the in-order run. A batch's changelog, sorted by
`op` and `order_key`, is its step: its additions, then its retractions, each
in meta order (as `Result.changes` has them).
"""
from __future__ import annotations

import json

import pyarrow as pa

from flamespark.core.codec import unpack
from flamespark.engines.spark.rows import CHANGE, LATE, OUT, bundle_records
from flamespark.io.jsonl import dumps
from flamespark.runtime.changes import ADD, RETRACT

RELEASED, CHANGED, DEAD = "out", "change", "late"
COLUMNS = ["sink", "ts", "payload", "order_key", "kind"]
CHANGE_COLUMNS = ["op", "cause"]
_TYPES = {"sink": pa.string(), "ts": pa.int64(), "payload": pa.string(), "order_key": pa.binary(),
          "kind": pa.string(), "op": pa.string(), "cause": pa.string()}


def output_schema(changes: bool) -> str:
    """The DDL schema of the output DataFrame."""
    columns = COLUMNS + (CHANGE_COLUMNS if changes else [])
    ddl = {pa.string(): "STRING", pa.int64(): "LONG", pa.binary(): "BINARY"}
    return ", ".join(f"{name} {ddl[_TYPES[name]]}" for name in columns)


def _number(value: int) -> bytes:
    """An integer as bytes that sort as the integers do, whatever their size: a length byte (above 0x80 for
    n >= 0, below for n < 0, further from it the longer), then the big-endian magnitude (complemented if n < 0).

    >>> sorted([5, -1, 0, 2**64, -300, 255, 256], key=_number)
    [-300, -1, 0, 5, 255, 256, 18446744073709551616]
    """
    if value >= 0:
        size = max(1, (value.bit_length() + 7) // 8)
        return bytes((0x80 + size,)) + value.to_bytes(size, "big")
    magnitude = -value - 1
    size = max(1, (magnitude.bit_length() + 7) // 8)
    return bytes((0x7F - size,)) + (~magnitude & ((1 << 8 * size) - 1)).to_bytes(size, "big")


def order_key(meta, data: bytes) -> bytes:
    """Bytes that sort as `(meta, data)` does: the meta's time, source (NUL-terminated, a NUL in it escaped),
    tie-break and path, then the payload's encoding after a NUL, below any path index's first byte, so that
    a meta sorts before its extensions whatever the payloads.

    >>> from flamespark.core.items import Meta
    >>> metas = [Meta(5, "b", 1, (0,)), Meta(-3, "z", 9, (4,)), Meta(5, "a", 7, (2, 1)), Meta(5, "a", 7, (2,))]
    >>> sorted(metas, key=lambda meta: order_key(meta, b"\\xff")) == sorted(metas)
    True
    """
    ts, source, tiebreak, *path = meta
    name = source.encode().replace(b"\0", b"\0\xff") + b"\0\0"
    return b"".join((_number(ts), name, _number(tiebreak), *map(_number, path), b"\0", data))


def _cause(cause) -> str | None:
    """A changelog row's `cause` column: the bundle's `[source, ts, position]` as JSON, or None."""
    if cause is None:
        return None
    source, ts, position = cause
    return json.dumps({"source": source, "ts": ts, "position": position})


class ReleasedRows:
    """`mapInArrow`'s function: the stages' released bundles, changelog bundles (with `changes`) and dead letters
    as output rows; every other row (metrics) is left out."""

    def __init__(self, changes: bool):
        self.changes = changes

    def __call__(self, batches):
        columns = COLUMNS + (CHANGE_COLUMNS if self.changes else [])
        schema = pa.schema([(name, _TYPES[name]) for name in columns])
        for batch in batches:
            rows = []
            for kind, payload in zip(batch.column("kind").to_pylist(), batch.column("payload").to_pylist()):
                if kind == OUT:
                    rows += [(sink, meta[0], dumps(unpack(data)), order_key(meta, data), RELEASED, None, None)
                             for sink, meta, data, *_ in bundle_records(payload)]
                elif kind == CHANGE and self.changes:
                    rows += [(sink, meta[0], dumps(unpack(data)), order_key(meta, data), CHANGED,
                              RETRACT if weight < 0 else ADD, _cause(cause))
                             for sink, meta, data, weight, _, cause in bundle_records(payload)]
                elif kind == LATE:
                    dead = unpack(payload)
                    rows.append((None, dead["ts"], dumps(dead), None, DEAD, None, None))
            values = list(zip(*rows)) if rows else [[] for _ in columns]
            yield pa.RecordBatch.from_arrays([pa.array(values[index], type=_TYPES[name])
                                              for index, name in enumerate(columns)], schema=schema)
