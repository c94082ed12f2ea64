"""Settling: cancelling tombstones with their items while an engine has time to spare, before their punctuation.

A paced local run waits between arrivals; `Barrier.settle` spends that time
here so that a punctuation has fewer pairs to cancel among what it releases.
What is released is the same with or without settling: a pair is settled
only when no other copy of its item could make the punctuation pick
differently, and a settled time is held again, for the punctuation to
decide, if a copy of a settled item comes later.
"""
import math

from flamespark.core.items import Item


class Settling:
    """The settling of one barrier's state (`BarrierState`): the tombstones pushed since it last ran, the pairs
    it settled per event time until their punctuation, and how many tombstones the state holds, when known.

    `size` counts the entries settled whose punctuation has not come: the barrier's `len` counts them as held.
    The pairs it cancels leave `state`, so an engine that stores `state` does not settle.
    """

    def __init__(self, state):
        self.state = state
        self.fresh = []  # the tombstones pushed since the last `settle`
        # How many tombstones `state.held` holds: known if it held none when settling began, else None.
        self.loose = 0 if state.tombstones == 0 else None
        self.settled = {}  # event time -> Settled
        self.size = 0

    def pushed(self, tombstone):
        """Note a tombstone the barrier holds from now on."""
        self.fresh.append(tombstone)
        self._count_loose(1)

    def _count_loose(self, change: int):
        if self.loose is not None:
            self.loose += change

    def settle(self, has_time=None):
        """Cancel now the fresh tombstones that meet their items (see `Barrier.settle`)."""
        self._settle(math.inf, has_time)

    def before_punctuation(self, time):
        """Settle what `time` releases (cheaper than cancelling it among all that is released), and forget the
        pairs settled up to it."""
        if self.fresh:  # most punctuations have nothing settled or to settle: no call then
            self._settle(time)
        if self.settled:
            self._forget_settled(time)

    def released_loose(self, released: list) -> bool:
        """Whether tombstones are among `released` (counted out of `loose`), for a barrier whose held tombstones
        are counted: if none is held, no look at each item."""
        if not self.loose:
            return False
        loose = sum(item.tombstone for item in released)
        self.loose -= loose
        return loose > 0

    def _settle(self, until, has_time=None):
        """Settle the fresh tombstones with event times up to `until` (while `has_time()`, if given); the others
        stay fresh."""
        if not self.fresh or (has_time is not None and not has_time()):
            return
        horizon = self.state.horizon
        by_time = {}
        later = []
        for tombstone in self.fresh:
            ts = tombstone.meta.ts
            if ts > until:
                later.append(tombstone)
            elif ts > horizon:  # else its punctuation has come
                by_time.setdefault(ts, []).append(tombstone)
        self.fresh = later
        out_of_time = False
        for ts, tombstones in by_time.items():
            out_of_time = out_of_time or (has_time is not None and not has_time())
            if out_of_time:
                later += tombstones
            else:
                self._settle_at(ts, tombstones)

    def _settle_at(self, ts, tombstones: list):
        settled = self.settled.get(ts)
        held = self.state.held.at(ts)
        if settled is not None and (settled.tainted or self._taints(ts, settled, held)):
            return
        gone = _pairs(held, tombstones)
        if gone:
            self.state.held.remove_at(ts, gone)
            self._count_loose(-(len(gone) // 2))
            self.size += len(gone)
            settled = self.settled.setdefault(ts, Settled())
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
        self.size -= 2 * len(settled.pairs)
        settled.pairs = []
        settled.tainted = True
        return True

    def _forget_settled(self, time):
        """Forget the pairs settled at event times up to `time`, unless a copy of one came since."""
        for ts in [ts for ts in self.settled if ts <= time]:
            settled = self.settled.pop(ts)
            if not settled.tainted and not self._taints(ts, settled, self.state.held.at(ts)):
                self.size -= 2 * len(settled.pairs)


class Settled:
    """What settling cancelled at one event time: `(sink, meta, data, arrival)` of each item."""

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
