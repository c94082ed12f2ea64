"""The barrier (the FlameStream paper's Algorithm 3): the one buffer in front of all sinks.

Algorithm 3 in the paper holds items sorted in a buffer: `Insert(item)` puts
an item at its place, or removes the item a tombstone cancels, and
`Punctuation(time)` emits, in order, every item with an earlier time. Here
`push` is Insert and `punctuate` is Punctuation, with two differences that
out-of-order arrival asks for: a tombstone can arrive before its item, so
tombstones are held like items and cancel theirs when their punctuation
comes (an item and its tombstone share their time, so they leave together);
and a punctuation's time is itself released (`ts <= time`). The buffer is an
Impatience sorter, which takes items arriving nearly in order cheaply.
"""
import math
from collections import Counter
from operator import attrgetter

from barrier.impatience import ImpatienceSorter
from barrier.settling import Settling
from flamespark.core.codec import unpack
from flamespark.core.errors import InternalError
from flamespark.core.items import Item, Meta


class BarrierState:
    """What a barrier holds: its items (each knowing its `sink`) sorted by event time, its horizon and counters.

    `dump()` gives msgpack-able lists without changing the state, and
    `load()` inverts it, for engines that keep the barrier in a state store.
    """

    __slots__ = ("held", "horizon", "arrived", "tombstones", "released")

    def __init__(self):
        self.held = ImpatienceSorter()
        self.horizon = -math.inf
        self.arrived = 0
        self.tombstones = 0
        self.released = 0

    def dump(self) -> list:
        held = [
            [item.sink, item.meta.dump(), item.data, item.tombstone, item.arrival]
            for _, item in self.held.snapshot()
        ]
        return [self.horizon, self.arrived, self.tombstones, self.released, held]

    @classmethod
    def load(cls, dumped) -> "BarrierState":
        state = cls()
        state.horizon, state.arrived, state.tombstones, state.released, held = dumped
        state.hold(held)
        return state

    def hold(self, entries: list):
        """Hold again entries of `dump()`'s held list, which were counted when they arrived."""
        for sink, meta, data, tombstone, arrival in entries:
            meta = Meta.load(meta)
            self.held.push(meta.ts, Item(meta, None, data, tombstone, arrival, sink))


class Barrier:
    """Holds sink items and tombstones until a punctuation proves them final.

    `push(sink, item)` (the paper's Insert) holds an item or a tombstone,
    noting the sink on the item (on a copy, if the item was pushed for
    another sink before). `punctuate(T)` (Punctuation) releases, in meta
    order, every item with `ts <= T` that no tombstone cancels: tombstones
    cancel items by count (same sink, meta and payload), whichever of the
    two came first. Each released item's `sink` says where it goes; engines
    release its payload as it was made, which `item.data` encodes (an item
    held again from a dump has only its data). A tombstone left without its
    item is an internal error.

    Everything it holds is in `state`, which the engine hands it (a new one
    by default); `horizon` and the counters read from it. An engine with time
    to spare calls `settle()` so that punctuations have less to do (see
    `barrier.settling`).
    """

    def __init__(self, state: BarrierState | None = None):
        self.state = BarrierState() if state is None else state
        self.settling = None  # a Settling, from the first call of `settle`

    @property
    def horizon(self):
        return self.state.horizon

    @property
    def arrived(self) -> int:
        return self.state.arrived

    @property
    def tombstones(self) -> int:
        return self.state.tombstones

    @property
    def released(self) -> int:
        return self.state.released

    def __len__(self):
        return len(self.state.held) + (0 if self.settling is None else self.settling.size)

    def earliest(self):
        """The smallest event time held, or None."""
        return self.state.held.min_ts

    def push(self, sink: str, item):
        """Hold `item`, or a tombstone, for `sink` until the punctuation of its time (the paper's Insert)."""
        state = self.state
        ts = item.meta[0]  # its event time, indexed: `.ts` is a property call, and this runs for every item
        if ts <= state.horizon:
            kind = "tombstone" if item.tombstone else "item"
            raise InternalError(
                f"internal error: a {kind} for sink {sink!r} from {item.meta.describe()} reached the "
                f"barrier after punctuation {state.horizon} had released its time"
            )
        state.arrived += 1
        if item.sink is None:
            item.sink = sink
        elif item.sink != sink:  # one stream into several sinks: the same item object reaches each
            item = Item(item.meta, item.payload, item.data, item.tombstone, item.arrival, sink)
        if item.tombstone:
            state.tombstones += 1
            if self.settling is not None:
                self.settling.pushed(item)
        state.held.push(ts, item)

    def settle(self, has_time=None):
        """Cancel now the tombstones pushed since the last call that meet their items, so that their punctuation
        need not. What is released is the same with or without; tombstones pushed before the first call, or
        before their items, are left to their punctuation. With `has_time`, it settles one event time after
        another while `has_time()` is true, and leaves the rest to the next call."""
        if self.settling is None:
            self.settling = Settling(self.state)
        self.settling.settle(has_time)

    def punctuate(self, time) -> list:
        """Release, in meta order, the items with `ts <= time` that no tombstone cancels (the paper's
        Punctuation); a time at or below the horizon releases nothing."""
        state = self.state
        if time <= state.horizon:
            return []
        settling = self.settling
        if settling is not None:
            settling.before_punctuation(time)
        state.horizon = time
        released = state.held.flush(time)
        # A tombstone leaves with its item (they share their time) and cancels it here; a settling barrier that
        # counts the tombstones it holds looks at no item when it holds none.
        if settling is None or settling.loose is None:
            for item in released:
                if item.tombstone:
                    released = _cancel(released)
                    break
        elif settling.released_loose(released):
            released = _cancel(released)
        if len(released) > 1:
            released.sort(key=_meta_order)
        state.released += len(released)
        return released


def _cancel(entries: list) -> list:
    """The items of `entries` that no tombstone among them cancels (of equal copies, the earliest to arrive)."""
    tombstones = [item for item in entries if item.tombstone]
    cancelled = Counter((tombstone.sink, tombstone.meta, tombstone.data) for tombstone in tombstones)
    # Only an item whose payload some tombstone carries can be cancelled: the others skip building an identity.
    suspects = {tombstone.data for tombstone in tombstones}
    copies = {}
    survivors = []
    for item in entries:
        if item.data in suspects:
            if item.tombstone:
                continue
            identity = (item.sink, item.meta, item.data)
            if identity in cancelled:
                copies.setdefault(identity, []).append(item)
                continue
        survivors.append(item)
    orphans = []
    for identity, count in cancelled.items():
        made = copies.get(identity, ())
        if len(made) < count:
            sink, meta, data = identity
            orphans.append((meta, sink, data, count - len(made)))
        elif len(made) > count:
            made.sort(key=_arrival)
            survivors.extend(made[: len(made) - count])
    if orphans:
        # The first in meta order, not in arrival order, so that whether `settle` ran does not change which.
        meta, sink, data, missing = min(orphans)
        raise InternalError(
            f"internal error: {missing} tombstone(s) for sink {sink!r} from {meta.describe()} "
            f"never met their item (payload {unpack(data)!r})"
        )
    return survivors


def _arrival(item):
    return item.arrival


_meta_order = attrgetter("meta", "sink", "data")  # an item's place in a release, with no Python frame per item
