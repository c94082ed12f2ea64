"""The barrier (paper Algorithm 3): the one buffer in front of all sinks."""
import math

from barrier.impatience import ImpatienceSorter
from flamespark.core.codec import unpack
from flamespark.core.errors import InternalError
from flamespark.core.items import Item, Meta


class Barrier:
    """Holds sink items and tombstones until a punctuation proves them final.

    Tombstones cancel items by count (same sink, meta and payload), whichever
    of the two comes first. `punctuate(T)` releases, in meta order, every
    surviving item with `ts <= T` as `(sink, item)` pairs; engines release the
    decoded `item.data`, exactly what was encoded when the item was made. A
    tombstone left without its item is an internal error.
    """

    def __init__(self):
        self._sorter = ImpatienceSorter()
        self.horizon = float("-inf")
        self.arrived = 0
        self.tombstones = 0
        self.released = 0

    def __len__(self):
        return len(self._sorter)

    def earliest(self):
        """The smallest event time held, or None."""
        return self._sorter.min_ts if len(self._sorter) else None

    def push(self, sink: str, item):
        if item.meta.ts <= self.horizon:
            kind = "tombstone" if item.tombstone else "item"
            raise InternalError(
                f"internal error: a {kind} for sink {sink!r} from {item.meta.describe()} reached the "
                f"barrier after punctuation {self.horizon} had released its time"
            )
        self.arrived += 1
        self.tombstones += item.tombstone
        self._sorter.push(item.meta.ts, (sink, item))

    def punctuate(self, time) -> list:
        if time <= self.horizon:
            return []
        self.horizon = time
        tally = {}
        for sink, item in self._sorter.flush(time):
            identity = (item.meta, item.data, sink)
            entry = tally.get(identity)
            if entry is None:
                entry = tally[identity] = [0, None]
            if item.tombstone:
                entry[0] -= 1
            else:
                entry[0] += 1
                if entry[1] is None or item.arrival < entry[1].arrival:
                    entry[1] = item
        released = []
        for (meta, data, sink), (count, item) in sorted(tally.items(), key=_order):
            if count < 0:
                raise InternalError(
                    f"internal error: {-count} tombstone(s) for sink {sink!r} from {meta.describe()} "
                    f"never met their item (payload {unpack(data)!r})"
                )
            released.extend([(sink, item)] * count)
        self.released += len(released)
        return released


    def dump(self) -> list:
        """The barrier as msgpack-able lists, for engines that keep it in a state store."""
        entries = self._sorter.flush(math.inf)
        for sink, item in entries:
            self._sorter.push(item.meta.ts, (sink, item))
        held = [[sink, item.meta.dump(), item.data, item.tombstone, item.arrival] for sink, item in entries]
        return [self.horizon, self.arrived, self.tombstones, self.released, held]

    @classmethod
    def load(cls, dumped) -> "Barrier":
        barrier = cls()
        barrier.horizon, barrier.arrived, barrier.tombstones, barrier.released, held = dumped
        for sink, meta, data, tombstone, arrival in held:
            meta = Meta.load(meta)
            barrier._sorter.push(meta.ts, (sink, Item(meta, None, data, tombstone, arrival)))
        return barrier


def _order(entry):
    return entry[0]
