"""The barrier (paper Algorithm 3): the one buffer in front of all sinks."""
import math
from collections import Counter
from operator import attrgetter

from barrier.impatience import ImpatienceSorter
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

    Tombstones cancel items by count (same sink, meta and payload), whichever
    of the two comes first. `push(sink, item)` notes the sink on the item
    (on a copy, if the item was pushed for another sink before);
    `punctuate(T)` releases, in meta order, every surviving item with
    `ts <= T`, whose `sink` says where it goes; engines release its payload
    as it was made, which `item.data` encodes (an item held again from a
    dump has only its data). A tombstone left without its item is an
    internal error.

    Everything it holds is in `state`, which the engine hands it (a new one
    by default); `horizon` and the counters read from it. An engine with time
    to spare calls `settle()` so that punctuations have less to do; the pairs
    it cancels then leave `state`, so an engine that stores `state` does not.
    """

    def __init__(self, state: BarrierState | None = None):
        self.state = BarrierState() if state is None else state
        self._fresh = None  # the tombstones pushed since the last `settle`, once it was first called
        self._loose = None  # how many tombstones `state.held` holds, if known (from a first `settle` before any)
        self._settled = {}  # event time -> Settled
        self._settled_size = 0  # entries settled whose punctuation has not come: `len` counts them as held

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
        return len(self.state.held) + self._settled_size

    def earliest(self):
        """The smallest event time held, or None."""
        return self.state.held.min_ts

    def push(self, sink: str, item):
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
            if self._fresh is not None:
                self._fresh.append(item)
                self._count_loose(1)
        state.held.push(ts, item)

    def _count_loose(self, change: int):
        if self._loose is not None:
            self._loose += change

    def settle(self, has_time=None):
        """Cancel now the tombstones pushed since the last call that meet their items, so that their punctuation
        need not. What is released is the same with or without; tombstones pushed before the first call, or
        before their items, are left to their punctuation. With `has_time`, it settles one event time after
        another while `has_time()` is true, and leaves the rest to the next call."""
        if self._fresh is None:
            self._fresh = []
            self._loose = 0 if self.state.tombstones == 0 else None
        self._settle(math.inf, has_time)

    def _settle(self, until, has_time=None):
        """Settle the fresh tombstones with event times up to `until` (while `has_time()`, if given); the others
        stay fresh."""
        if not self._fresh or (has_time is not None and not has_time()):
            return
        horizon = self.state.horizon
        by_time = {}
        later = []
        for tombstone in self._fresh:
            ts = tombstone.meta.ts
            if ts > until:
                later.append(tombstone)
            elif ts > horizon:  # else its punctuation has come
                by_time.setdefault(ts, []).append(tombstone)
        self._fresh = later
        out_of_time = False
        for ts, tombstones in by_time.items():
            out_of_time = out_of_time or (has_time is not None and not has_time())
            if out_of_time:
                later += tombstones
            else:
                self._settle_at(ts, tombstones)

    def _settle_at(self, ts, tombstones: list):
        settled = self._settled.get(ts)
        held = self.state.held.at(ts)
        if settled is not None and (settled.tainted or self._taints(ts, settled, held)):
            return
        gone = _pairs(held, tombstones)
        if gone:
            self.state.held.remove_at(ts, gone)
            self._count_loose(-(len(gone) // 2))
            self._settled_size += len(gone)
            settled = self._settled.setdefault(ts, Settled())
            settled.add(gone)
        if settled is not None:
            settled.seen = len(held) - len(gone)

    def _taints(self, ts, settled: "Settled", held: list) -> bool:
        """Whether an item pushed at `ts` since the last settling there is a copy of one settled: if so, the pairs
        are held again, rebuilt without payloads (as `BarrierState.load` does), for the punctuation to cancel,
        which picks the copies that survive by arrival."""
        if not settled.meets_a_copy(held[settled.seen:]):
            return False
        for sink, meta, data, arrival in settled.pairs:
            self.state.held.push(ts, Item(meta, None, data, False, arrival, sink))
            self.state.held.push(ts, Item(meta, None, data, True, arrival, sink))
        self._count_loose(len(settled.pairs))
        self._settled_size -= 2 * len(settled.pairs)
        settled.pairs = []
        settled.tainted = True
        return True

    def _forget_settled(self, time):
        """Forget the pairs settled at event times up to `time`, unless a copy of one came since."""
        for ts in [ts for ts in self._settled if ts <= time]:
            settled = self._settled.pop(ts)
            if not settled.tainted and not self._taints(ts, settled, self.state.held.at(ts)):
                self._settled_size -= 2 * len(settled.pairs)

    def punctuate(self, time) -> list:
        state = self.state
        if time <= state.horizon:
            return []
        if self._fresh:  # most punctuations have nothing settled or to settle: no call then
            self._settle(time)  # cheaper than cancelling them among all that is released
        if self._settled:
            self._forget_settled(time)
        state.horizon = time
        released = state.held.flush(time)
        if self._loose is None:
            for item in released:
                if item.tombstone:
                    released = _cancel(released)
                    break
        elif self._loose:
            loose = sum(item.tombstone for item in released)
            if loose:
                self._loose -= loose
                released = _cancel(released)
        if len(released) > 1:
            released.sort(key=_meta_order)
        state.released += len(released)
        return released


class Settled:
    """What `Barrier.settle` cancelled at one event time: `(sink, meta, data, arrival)` of each item."""

    __slots__ = ("pairs", "payloads", "seen", "tainted")

    def __init__(self):
        self.pairs = []
        self.payloads = set()
        self.seen = 0  # how many entries it left held at its time: later ones were pushed since
        self.tainted = False  # a copy of a settled item came: the time is left to its punctuation

    def add(self, gone: list):
        """Note the items among `gone`, the entries settled."""
        items = [(item.sink, item.meta, item.data, item.arrival) for item in gone if not item.tombstone]
        self.pairs += items
        self.payloads.update(data for _, _, data, _ in items)

    def meets_a_copy(self, entries: list) -> bool:
        """Whether an item of `entries` is a copy of (same sink, meta and payload as) one settled."""
        payloads = self.payloads
        suspects = [(item.sink, item.meta, item.data) for item in entries if item.data in payloads]
        return bool(suspects) and not {pair[:3] for pair in self.pairs}.isdisjoint(suspects)


def _pairs(held: list, tombstones: list) -> list:
    """The tombstones, and as many items of `held` they cancel, of each identity with no more copies held than
    tombstones: with more, which copies survive depends on their arrivals, and the punctuation picks."""
    waiting = {}
    for tombstone in tombstones:
        waiting.setdefault((tombstone.sink, tombstone.meta, tombstone.data), []).append(tombstone)
    payloads = {tombstone.data for tombstone in tombstones}
    copies = {}
    for item in [item for item in held if item.data in payloads]:
        identity = (item.sink, item.meta, item.data)
        if not item.tombstone and identity in waiting:
            copies.setdefault(identity, []).append(item)
    pairs = []
    for identity, made in copies.items():
        if len(made) <= len(waiting[identity]):
            pairs += made
            pairs += waiting[identity][: len(made)]
    return pairs


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
