"""A key's items in meta order, emitting the windows each change creates or destroys."""
from bisect import bisect_left

from flamespark.core.codec import unpack
from flamespark.core.items import Item, Meta


class Bucket:
    """The items of one key in meta order (paper §V-B, Algorithms 1 and 2).

    Items are counted by identity (meta + payload): a tombstone subtracts one,
    an item adds one, and only identities with a positive count are visible. So
    a tombstone that comes before its item simply cancels it on arrival.

    Buckets stay small (punctuations trim them), so a plain sorted list with
    bisect beats a tree; an in-order item is a plain append.

    `add(item, combine)` returns what `combine(window, is_tombstone)` makes of each
    window change, where a window is the tuple of the last `window` visible
    items ending at one item: tombstones for the windows that disappeared,
    then the windows that appeared (`changes(item)` gives the changes as
    `(is_tombstone, window)` pairs).
    """

    __slots__ = ("window", "_order", "_items", "_counts")
    dirty = None  # a bucket does all its work at once (see StateLog.dirty)

    def __init__(self, window: int):
        self.window = window
        self._order = []
        self._items = {}
        self._counts = {}

    @property
    def empty(self) -> bool:
        """Whether the bucket holds nothing: no item, and no tombstone waiting for its item."""
        return not self._counts

    @property
    def latest(self):
        """The latest event time among its items and waiting tombstones, or None: once a punctuation reaches
        it, `collect` leaves the bucket as it is until something new comes."""
        times = [self._order[-1][0].ts] if self._order else []
        if len(self._counts) != len(self._items):
            times += [meta.ts for meta, data in self._counts if (meta, data) not in self._items]
        return max(times, default=None)

    @property
    def forgets_from(self):
        """The earliest punctuation at which `collect` would forget an item (the one `window - 1` items before
        it stay), or None if it holds too few."""
        order = self._order
        return order[self.window - 1][0].ts if len(order) >= self.window else None

    def items(self) -> list:
        """The visible items in meta order."""
        return [self._items[identity] for identity in self._order]

    def add(self, item, combine) -> list:
        return [combine(window, tombstone) for tombstone, window in self.changes(item)]

    def changes(self, item) -> list:
        """Add `item` or tombstone; returns the window changes, as `(is_tombstone, window)` pairs."""
        identity = item.identity
        before = self._counts.get(identity, 0)
        after = before - 1 if item.tombstone else before + 1
        if after:
            self._counts[identity] = after
        else:
            del self._counts[identity]
        if before <= 0 < after:
            return self._insert(identity, item)
        if after <= 0 < before:
            return self._remove(identity)
        return []

    def _insert(self, identity, item):
        order = self._order
        self._items[identity] = item
        if not order or order[-1] < identity:
            order.append(identity)
            return [(False, self._last_window())]
        position = bisect_left(order, identity)
        order.insert(position, identity)
        segment, low, high = self._segment(position)
        changes = [(True, self._window(segment, low, j, skip=position)) for j in range(position + 1, high + 1)]
        changes += [(False, self._window(segment, low, j)) for j in range(position, high + 1)]
        return changes

    def _remove(self, identity):
        order = self._order
        position = bisect_left(order, identity)
        segment, low, high = self._segment(position)
        changes = [(True, self._window(segment, low, j)) for j in range(position, high + 1)]
        changes += [(False, self._window(segment, low, j, skip=position)) for j in range(position + 1, high + 1)]
        del order[position]
        del self._items[identity]
        return changes

    def _segment(self, position):
        """The items every window touching `position` can contain, with their index range."""
        low = max(0, position + 1 - self.window)
        high = min(len(self._order) - 1, position + self.window - 1)
        segment = [self._items[identity] for identity in self._order[low : high + 1]]
        return segment, low, high

    def _last_window(self):
        items = self._items
        return tuple(items[identity] for identity in self._order[-self.window :])

    def _window(self, segment, low, end, skip=None):
        """The window ending at index `end`; with `skip`, as it was without that index."""
        start = max(0, end + 1 - self.window - (skip is not None))
        return tuple(segment[i - low] for i in range(start, end + 1) if i != skip)

    def collect(self, time) -> int:
        """Forget items with `ts <= time` but the last `window - 1`; returns orphan tombstones seen."""
        cut = bisect_left(self._order, ((time + 1,),))
        drop = cut - (self.window - 1)
        if drop > 0:
            for identity in self._order[:drop]:
                del self._items[identity]
                del self._counts[identity]
            del self._order[:drop]
        if len(self._counts) == len(self._items):
            return 0
        return -sum(count for (meta, _), count in self._counts.items() if count < 0 and meta.ts <= time)

    def dump(self) -> list:
        """The bucket as msgpack-able lists, for engines that keep it in a state store."""
        items = self._items
        visible = [
            [identity[0].dump(), identity[1], items[identity].arrival, count]
            for identity, count in self._counts.items()
            if identity in items
        ]
        pending = [[meta.dump(), data, count] for (meta, data), count in self._counts.items() if (meta, data) not in items]
        return [visible, pending]

    @classmethod
    def load(cls, window: int, dumped) -> "Bucket":
        """Rebuild a bucket from `dump()`."""
        bucket = cls(window)
        visible, pending = dumped
        for meta, data, arrival, count in visible:
            item = Item(Meta.load(meta), unpack(data), data, False, arrival)
            bucket._items[item.identity] = item
            bucket._counts[item.identity] = count
            bucket._order.append(item.identity)
        bucket._order.sort()
        for meta, data, count in pending:
            bucket._counts[(Meta.load(meta), data)] = count
        return bucket
