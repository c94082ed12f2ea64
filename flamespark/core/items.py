"""Items and their ordering meta-information.

`Meta` defines the total order of items: event time, then source name, then a
tie-break derived from the event's payload, then the child path. A child path
starts with the event's position in its source's arrival order (which tells
identical events apart) and grows by one index per derivation step, so a derivative sorts after its parent
and before the parent's successor, and several outputs of one call keep their
emission order.
"""
from __future__ import annotations

from operator import itemgetter
from zlib import adler32, crc32

from flamespark.core.codec import pack
from flamespark.core.errors import PayloadError


class Meta(tuple):
    """`(ts, source, tiebreak, *path)` as one flat tuple: a derivative's meta is one tuple, not two.

    Comparing flat metas orders them as `(ts, source, tiebreak, path)` would,
    since every path index is an int and a path sorts after its prefixes.

    >>> parent = Meta(5, "s", 0, (3,))
    >>> child = parent.child(1)
    >>> child.ts, child.path, parent < child < Meta(5, "s", 0, (4,))
    (5, (3, 1), True)
    """

    __slots__ = ()

    def __new__(cls, ts: int, source: str, tiebreak: int, path: tuple = ()):
        return tuple.__new__(cls, (ts, source, tiebreak, *path))

    ts = property(itemgetter(0))
    source = property(itemgetter(1))
    tiebreak = property(itemgetter(2))
    position = property(itemgetter(3), doc="The event's position in its source's arrival order.")

    @property
    def path(self) -> tuple:
        return self[3:]

    def child(self, index: int) -> "Meta":
        """The meta of this item's `index`-th derivative."""
        return new_meta(Meta, self + (index,))

    def describe(self) -> str:
        return f"event ts={self[0]} of source {self[1]!r}"

    def dump(self) -> list:
        """A msgpack-able form; `Meta.load` inverts it."""
        return list(self)

    @classmethod
    def load(cls, dumped) -> "Meta":
        return new_meta(cls, dumped)

    def __repr__(self):
        return f"Meta(ts={self[0]}, source={self[1]!r}, tiebreak={self[2]}, path={self[3:]})"


new_meta = tuple.__new__  # `new_meta(Meta, fields)`: a Meta of the flat `fields`, which it copies


def event_tiebreak(data: bytes) -> int:
    """A deterministic 64-bit tie-break from an event's encoded payload: its CRC-32, then its Adler-32.

    It orders events of one source with equal times by what they hold, never by when they came. Two C calls
    make it: an order needs no cryptographic hash, which would cost more per event; checkpoints keep it in
    every item's meta, so changing it changes their layout."""
    return crc32(data) << 32 | adler32(data)


class Item:
    """A payload with its meta; `data` is the payload's msgpack encoding.

    Two items are the same item when meta and data are equal: that is what a
    tombstone matches on. `arrival` (wall-clock seconds of the latest input
    event the item depends on) never takes part in identity. `sink` is the
    sink the barrier holds the item for (None before): the barrier keeps
    items, not `(sink, item)` pairs. A sixth slot costs no memory (CPython
    rounds an object of five to the same 80 bytes).
    """

    __slots__ = ("meta", "payload", "data", "tombstone", "arrival", "sink")

    def __init__(self, meta, payload, data, tombstone=False, arrival=0.0, sink=None):
        self.meta = meta
        self.payload = payload
        self.data = data
        self.tombstone = tombstone
        self.arrival = arrival
        self.sink = sink

    @property
    def identity(self):
        return (self.meta, self.data)

    def __repr__(self):
        kind = "Tombstone" if self.tombstone else "Item"
        return f"{kind}({self.meta.ts}, {self.meta.source!r}, {self.meta.path}, {self.payload!r})"


def encode(value, name: str, meta: Meta, what: str = "a payload", kind: str = "operator") -> bytes:
    """Encode `value`, or raise the PayloadError naming the `kind` (operator or source) `name` that made it, `what`
    it is (a payload, a key, a state) and the event.

    >>> encode({1, 2}, "count", Meta(5, "s", 0, (0,)), what="a state")
    Traceback (most recent call last):
    ...
    flamespark.core.errors.PayloadError: operator 'count' produced a state msgpack cannot encode for event ts=5 of source 's': cannot encode object of type set: {1, 2}
    """
    try:
        return pack(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise PayloadError(f"{kind} {name!r} produced {what} msgpack cannot encode for {meta.describe()}: {exc}") \
            from None


def encode_event(source: str, ts: int, payload) -> bytes:
    """Encode an input event's payload, or raise the PayloadError naming the source and the event."""
    return encode(payload, source, Meta(ts, source, 0, ()), kind="source")
