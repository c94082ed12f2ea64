"""Items and their ordering meta-information.

`Meta` defines the total order of items: event time, then source name, then a
tie-break derived from the event's payload, then the child path. A child path
starts with the event's position in its source's arrival order (which tells
identical events apart) and grows by one index per derivation step, so a derivative sorts after its parent
and before the parent's successor, and several outputs of one call keep their
emission order.
"""
from __future__ import annotations

import hashlib
from typing import NamedTuple

from flamespark.core.codec import pack
from flamespark.core.errors import PayloadError


class Meta(NamedTuple):
    ts: int
    source: str
    tiebreak: int
    path: tuple

    def child(self, index: int) -> "Meta":
        """The meta of this item's `index`-th derivative."""
        ts, source, tiebreak, path = self
        return new_meta(Meta, (ts, source, tiebreak, path + (index,)))

    def describe(self) -> str:
        return f"event ts={self.ts} of source {self.source!r}"

    def dump(self) -> list:
        """A msgpack-able form; `Meta.load` inverts it."""
        return [self.ts, self.source, self.tiebreak, list(self.path)]

    @classmethod
    def load(cls, dumped) -> "Meta":
        ts, source, tiebreak, path = dumped
        return cls(ts, source, tiebreak, tuple(path))


new_meta = tuple.__new__  # `new_meta(Meta, fields)`: Meta(*fields) without the named tuple's keyword handling


def event_tiebreak(data: bytes) -> int:
    """A deterministic 64-bit tie-break from an event's encoded payload."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


class Item:
    """A payload with its meta; `data` is the payload's msgpack encoding.

    Two items are the same item when meta and data are equal: that is what a
    tombstone matches on. `arrival` (wall-clock seconds of the latest input
    event the item depends on) never takes part in identity.
    """

    __slots__ = ("meta", "payload", "data", "tombstone", "arrival")

    def __init__(self, meta, payload, data, tombstone=False, arrival=0.0):
        self.meta = meta
        self.payload = payload
        self.data = data
        self.tombstone = tombstone
        self.arrival = arrival

    @property
    def identity(self):
        return (self.meta, self.data)

    def __repr__(self):
        kind = "Tombstone" if self.tombstone else "Item"
        return f"{kind}({self.meta.ts}, {self.meta.source!r}, {self.meta.path}, {self.payload!r})"


def encode(payload, operator: str, meta: Meta) -> bytes:
    """Encode a payload, naming the operator and the event if msgpack cannot."""
    try:
        return pack(payload)
    except (TypeError, ValueError, OverflowError) as exc:
        raise PayloadError(
            f"operator {operator!r} produced a payload msgpack cannot encode "
            f"for {meta.describe()}: {exc}"
        ) from None
