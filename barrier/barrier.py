"""The barrier (paper Algorithm 3): the one buffer in front of all sinks."""
import math
from collections import Counter

from barrier.impatience import ImpatienceSorter
from flamespark.core.codec import unpack
from flamespark.core.errors import InternalError
from flamespark.core.items import Item, Meta


class BarrierState:
    """What a barrier holds: its `(sink, item)` entries sorted by event time, its horizon and counters.

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
            [sink, item.meta.dump(), item.data, item.tombstone, item.arrival]
            for _, (sink, item) in self.held.snapshot()
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
            self.held.push(meta.ts, (sink, Item(meta, None, data, tombstone, arrival)))


class Barrier:
    """Holds sink items and tombstones until a punctuation proves them final.

    Tombstones cancel items by count (same sink, meta and payload), whichever
    of the two comes first. `punctuate(T)` releases, in meta order, every
    surviving item with `ts <= T` as `(sink, item)` pairs; engines release the
    decoded `item.data`, exactly what was encoded when the item was made. A
    tombstone left without its item is an internal error.

    Everything it holds is in `state`, which the engine hands it (a new one
    by default); `horizon` and the counters read from it. An engine with time
    to spare calls `settle()` so that punctuations have less to cancel.
    """

    def __init__(self, state: BarrierState | None = None):
        self.state = BarrierState() if state is None else state
        self._fresh = None  # the tombstones pushed since the last `settle`, once it was first called
        # Event time -> the pairs `settle` cancelled, by id: they stay held until their punctuation drops them.
        self._settled = {}

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
        return len(self.state.held)

    def earliest(self):
        """The smallest event time held, or None."""
        held = self.state.held
        return held.min_ts if len(held) else None

    def push(self, sink: str, item):
        state = self.state
        if item.meta.ts <= state.horizon:
            kind = "tombstone" if item.tombstone else "item"
            raise InternalError(
                f"internal error: a {kind} for sink {sink!r} from {item.meta.describe()} reached the "
                f"barrier after punctuation {state.horizon} had released its time"
            )
        state.arrived += 1
        entry = (sink, item)
        if item.tombstone:
            state.tombstones += 1
            if self._fresh is not None:
                self._fresh.append(entry)
        state.held.push(item.meta.ts, entry)

    def settle(self):
        """Cancel now the tombstones pushed since the last call that meet their items, which their punctuation
        then only drops. Releases are the same with or without; tombstones pushed before the first call, or
        before their items, are left to their punctuation."""
        if self._fresh is None:
            self._fresh = []
        self._settle(math.inf)

    def _settle(self, until):
        """Settle the fresh tombstones with event times up to `until`; the later ones stay fresh."""
        if not self._fresh:
            return
        horizon = self.state.horizon
        by_time = {}
        later = []
        for entry in self._fresh:
            ts = entry[1].meta.ts
            if ts > until:
                later.append(entry)
            elif ts > horizon:  # else its punctuation has come
                by_time.setdefault(ts, []).append(entry)
        self._fresh = later
        for ts, tombstones in by_time.items():
            self._settle_at(ts, tombstones)

    def _settle_at(self, ts, tombstones: list):
        waiting = {}
        for entry in tombstones:
            sink, item = entry
            waiting.setdefault((sink, item.meta, item.data), []).append(entry)
        payloads = {item.data for _, item in tombstones}
        settled = self._settled.get(ts) or Settled()
        for entry in self.state.held.at(ts):
            sink, item = entry
            if item.data in payloads and not item.tombstone and id(entry) not in settled.entries:
                matching = waiting.get((sink, item.meta, item.data))
                if matching:
                    settled.add(entry, matching.pop())
        if settled.entries:
            self._settled[ts] = settled

    def punctuate(self, time) -> list:
        state = self.state
        if time <= state.horizon:
            return []
        self._settle(time)  # cheaper than cancelling them among all that is released
        state.horizon = time
        released = state.held.flush(time)
        settled = self._take_settled(time)
        if settled is not None:
            released = settled.drop_from(released)
        else:
            for _, item in released:
                if item.tombstone:
                    released = _cancel(released)
                    break
        if len(released) > 1:
            released.sort(key=_meta_order)
        state.released += len(released)
        return released

    def _take_settled(self, time):
        """What `settle` cancelled with event times up to `time`, forgotten here, or None."""
        taken = None
        for ts in [ts for ts in self._settled if ts <= time]:
            settled = self._settled.pop(ts)
            if taken is None:
                taken = settled
            else:
                taken.merge(settled)
        return taken


class Settled:
    """Pairs of an item and its tombstone that `Barrier.settle` cancelled while both are still held."""

    __slots__ = ("entries", "payloads")

    def __init__(self):
        self.entries = {}  # by id: equal entries are not the same entry
        self.payloads = set()  # of the items

    def add(self, entry, tombstone):
        self.entries[id(entry)] = entry
        self.entries[id(tombstone)] = tombstone
        self.payloads.add(entry[1].data)

    def merge(self, other: "Settled"):
        self.entries.update(other.entries)
        self.payloads |= other.payloads

    def drop_from(self, flushed: list) -> list:
        """What `_cancel` leaves of `flushed`, which holds these pairs."""
        entries = self.entries
        kept = [entry for entry in flushed if id(entry) not in entries]
        suspects = [(sink, item) for sink, item in kept if item.tombstone or item.data in self.payloads]
        if not suspects:
            return kept
        copies = {(sink, item.meta, item.data) for sink, item in suspects if not item.tombstone}
        if copies and not copies.isdisjoint((sink, item.meta, item.data) for sink, item in entries.values()):
            return _cancel(flushed)  # a copy of a settled item: which of equal copies survive depends on all of them
        return _cancel(kept)


def _cancel(entries: list) -> list:
    """The items of `entries` that no tombstone among them cancels (of equal copies, the earliest to arrive)."""
    tombstones = [(sink, item) for sink, item in entries if item.tombstone]
    cancelled = Counter((sink, item.meta, item.data) for sink, item in tombstones)
    # Only an item whose payload some tombstone carries can be cancelled: the others skip building an identity.
    suspects = {item.data for _, item in tombstones}
    copies = {}
    survivors = []
    for entry in entries:
        sink, item = entry
        if item.data in suspects:
            if item.tombstone:
                continue
            identity = (sink, item.meta, item.data)
            if identity in cancelled:
                copies.setdefault(identity, []).append(item)
                continue
        survivors.append(entry)
    for identity, count in cancelled.items():
        sink, meta, data = identity
        made = copies.get(identity, ())
        if len(made) < count:
            raise InternalError(
                f"internal error: {count - len(made)} tombstone(s) for sink {sink!r} from {meta.describe()} "
                f"never met their item (payload {unpack(data)!r})"
            )
        if len(made) > count:
            made.sort(key=_arrival)
            survivors.extend((sink, item) for item in made[: len(made) - count])
    return survivors


def _arrival(item):
    return item.arrival


def _meta_order(entry):
    sink, item = entry
    return (*item.meta, sink, item.data)  # flat, so that comparing two walks each meta once, not twice
