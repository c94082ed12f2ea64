"""Event-time windows per key: tumbling, hopping and session windows, each folded by an `Aggregate`.

A key's bucket holds its open windows, each with its items in meta order and
the result it last emitted. Adding an item or a tombstone only marks the
windows it changes; the bucket makes their results at `flush` (the end of
an engine's step), so a window that several events of one step change
changes downstream once: a tombstone for the result it last emitted and its
new result, or nothing if that is unchanged. A window's value so far thus
reaches the barrier as soon as its events do (the changelog's early
results), and the barrier releases the one that survives when the
punctuation passes the window's last instant, `end - 1`, the event time of
its result. A window is forgotten at that punctuation: no event can change
it any more. Sessions grow, merge (an event bridging two) and split (a
tombstone leaving a gap); their results' metas follow their bounds.

A result's meta is `(end - 1, operator name, hash of key and start)`: what
made it, and in which order, does not change it, so a result made again
equal to the last one is no change. Its payload is
`{"key": k, "start": s, "end": e, "value": v}`.
"""
from bisect import bisect_left, bisect_right

from flamespark.core.codec import pack, unpack
from flamespark.core.errors import FlameSparkError
from flamespark.core.items import Item, Meta, encode, event_tiebreak, new_meta
from operators import early_tombstones
from operators.aggregates import IMMUTABLE
from operators.keyed import KeyedOperator
from operators.statelog import tombstone


class OpenWindow:
    """One window of one key: its items in meta order (`keys` holds their identities), how many of them `acc`
    has folded, the latest arrival among those, and the result last emitted (None before the first)."""

    __slots__ = ("start", "end", "keys", "items", "acc", "folded", "arrival", "emitted", "changed", "meta", "prefix")

    def __init__(self, start: int, end: int):
        self.start = start
        self.end = end
        self.keys = []
        self.items = []
        self.acc = None
        self.folded = 0
        self.arrival = 0.0
        self.emitted = None
        self.changed = False
        # Its result's meta and the encoding of its payload up to the value, once made; they depend on the key and
        # the bounds, so a session whose bounds change drops them.
        self.meta = None
        self.prefix = None

    def insert(self, item):
        """Add `item` in its place; a place before what `acc` folded makes the next fold start afresh."""
        identity = (item.meta, item.data)
        keys = self.keys
        if not keys or keys[-1] <= identity:
            keys.append(identity)
            self.items.append(item)
            return
        position = bisect_right(keys, identity)
        keys.insert(position, identity)
        self.items.insert(position, item)
        if position < self.folded:
            self.folded = 0

    def remove(self, identity) -> int:
        """Remove one item of `identity`; its position, or -1 if the window holds none."""
        keys = self.keys
        position = bisect_left(keys, identity)
        if position == len(keys) or keys[position] != identity:
            return -1
        del keys[position]
        del self.items[position]
        if position < self.folded:
            self.folded = 0
        return position

    def dump(self) -> list:
        emitted = self.emitted
        return [self.start, self.end, [[item.meta.dump(), item.data, item.arrival] for item in self.items],
                None if emitted is None else [emitted.meta.dump(), emitted.data, emitted.arrival]]

    @classmethod
    def load(cls, dumped) -> "OpenWindow":
        start, end, items, emitted = dumped
        window = cls(start, end)
        for meta, data, arrival in items:
            item = Item(Meta.load(meta), unpack(data), data, False, arrival)
            window.keys.append((item.meta, data))
            window.items.append(item)
        if emitted is not None:
            meta, data, arrival = emitted
            window.emitted = Item(Meta.load(meta), unpack(data), data, False, arrival)
        return window


class WindowBucket:
    """A key's open windows. Subclasses place items in windows (`_insert`, `_remove`) and keep them
    (`windows()`); the bucket notes the windows that changed and makes their results at `flush`.

    Tombstones whose items have not come yet wait in `pending` (identity ->
    count), and cancel their items on arrival.
    """

    __slots__ = ("key_data", "key", "pending", "changed", "retired", "dirty")

    def __init__(self, key_data: bytes | None = None):
        # The key (and its encoding), which results carry: a keyed operator makes a bucket before it can tell it
        # its key, so the operator sets it when it first makes a result (`WindowOperator.combine`).
        self.key_data = key_data
        self.key = None if key_data is None else unpack(key_data)
        self.pending = None
        self.changed = []  # windows changed since the last flush
        self.retired = []  # results of windows that vanished (emptied or merged) since the last flush
        self.dirty = None  # True while `changed` or `retired` holds something

    def add(self, item, combine) -> tuple:
        """Add an item or a tombstone; the results it changes wait for `flush`."""
        if item.tombstone:
            if not self._remove(item):
                self.pending = early_tombstones.wait(self.pending, (item.meta, item.data))
        elif not (self.pending and early_tombstones.cancel(self.pending, (item.meta, item.data))):
            self._insert(item)
        return ()

    def _mark(self, window):
        if not window.changed:
            window.changed = True
            self.changed.append(window)
            self.dirty = True

    def _retire(self, window):
        """`window` vanished: its result, if it made one, is retracted at the next flush."""
        if window.emitted is not None:
            self.retired.append(window.emitted)
            window.emitted = None
            self.dirty = True

    def flush(self, combine) -> list:
        """The results the changes since the last flush make: tombstones for results that no longer hold, then
        the new results. `combine(bucket, window)` makes a window's result."""
        changed, retired = self.changed, self.retired
        self.changed, self.dirty = [], None
        out = []
        made = []
        for window in changed:
            window.changed = False
            if not window.items:  # it vanished after it changed: its result is retired
                continue
            new = combine(self, window)
            old = window.emitted
            if old is not None:
                if old.data == new.data and old.meta == new.meta:
                    continue
                out.append(Item(old.meta, old.payload, old.data, True, old.arrival))  # `tombstone(old)`, inlined
            window.emitted = new
            made.append(new)
        if retired:
            self.retired = []
            if made:
                made = _cancel_equal(retired, made)
            out += map(tombstone, retired)
        if out:
            out += made
            return out
        return made

    def collect(self, time) -> int:
        """Forget the windows whose last instant is at or before `time`; returns orphan tombstones seen."""
        self._forget(time)
        return early_tombstones.orphans(self.pending, time)

    @property
    def latest(self):
        """The latest time at which a punctuation lets `collect` forget something (a window's last instant, a
        waiting tombstone's event time), or None if it holds nothing."""
        times = [window.end - 1 for window in self.windows()] + early_tombstones.times(self.pending)
        return max(times, default=None)

    @property
    def forgets_from(self):
        """The earliest punctuation at which `collect` forgets a window, or None if there is none."""
        return min((window.end - 1 for window in self.windows()), default=None)

    @property
    def empty(self) -> bool:
        return not self.pending and not any(True for _ in self.windows())

    def dump(self) -> list:
        return [self.key_data, [window.dump() for window in self.windows()], early_tombstones.dump(self.pending)]

    def _load(self, windows, pending):
        self.pending = early_tombstones.load(pending)
        return [OpenWindow.load(window) for window in windows]

    def windows(self):
        raise NotImplementedError

    def _insert(self, item):
        raise NotImplementedError

    def _remove(self, item) -> bool:
        """Remove the tombstone's item from its windows; False if the bucket does not hold it."""
        raise NotImplementedError

    def _forget(self, time):
        raise NotImplementedError


def _cancel_equal(retired: list, made: list) -> list:
    """Drop the new results equal to a retired one (a session split and merged back, a window emptied and
    filled again in one step), with that retired one; returns the new results left."""
    waiting = {}
    for index, item in enumerate(retired):
        waiting.setdefault((item.meta, item.data), []).append(index)
    kept = []
    for item in made:
        indexes = waiting.get((item.meta, item.data))
        if indexes:
            retired[indexes.pop()] = None
        else:
            kept.append(item)
    retired[:] = [item for item in retired if item is not None]
    return kept


class FixedWindows(WindowBucket):
    """Tumbling or hopping windows of one key, by start time."""

    __slots__ = ("spec", "by_start")

    def __init__(self, key_data: bytes | None, spec):
        super().__init__(key_data)
        self.spec = spec
        self.by_start = {}

    def windows(self):
        return self.by_start.values()

    def _insert(self, item):
        by_start, size, slide = self.by_start, self.spec.size, self.spec.slide
        ts = item.meta[0]
        start = ts - ts % slide  # `spec.starts`, inlined: it runs for every event
        while start > ts - size:
            window = by_start.get(start)
            if window is None:
                window = by_start[start] = OpenWindow(start, start + size)
            keys = window.keys
            identity = (item.meta, item.data)
            if keys and identity < keys[-1]:
                window.insert(item)
            else:  # `insert`, inlined for an item in order
                keys.append(identity)
                window.items.append(item)
            if not window.changed:  # `_mark`, inlined
                window.changed = True
                self.changed.append(window)
                self.dirty = True
            start -= slide

    def _remove(self, item) -> bool:
        identity = (item.meta, item.data)
        found = False
        for start in self.spec.starts(item.meta[0]):
            window = self.by_start.get(start)
            # An item is in all its windows or in none.
            if window is None or window.remove(identity) < 0:
                return found
            found = True
            if window.items:
                self._mark(window)
            else:
                self._retire(window)
                del self.by_start[start]
        return found

    def _forget(self, time):
        by_start = self.by_start
        for start in [start for start, window in by_start.items() if window.end - 1 <= time]:
            del by_start[start]

    @classmethod
    def load(cls, dumped, spec) -> "FixedWindows":
        key_data, windows, pending = dumped
        bucket = cls(key_data, spec)
        for window in bucket._load(windows, pending):
            bucket.by_start[window.start] = window
        return bucket


class SessionWindows(WindowBucket):
    """The sessions of one key, in time order: a session is `[first ts, last ts + gap)`, and sessions lie at
    least `gap` apart (from one's last event to the next one's first)."""

    __slots__ = ("gap", "sessions")

    def __init__(self, key_data: bytes | None, gap: int):
        super().__init__(key_data)
        self.gap = gap
        self.sessions = []

    def windows(self):
        return self.sessions

    def _insert(self, item):
        ts, gap, sessions = item.meta[0], self.gap, self.sessions
        # The sessions it joins are those with start - gap < ts < end: a run of consecutive ones, which an event
        # in order finds at the end.
        high = len(sessions)
        while high and sessions[high - 1].start - gap >= ts:
            high -= 1
        low = high
        while low and sessions[low - 1].end > ts:
            low -= 1
        if low == high:
            session = OpenWindow(ts, ts + gap)
            sessions.insert(high, session)
            session.insert(item)
            self._mark(session)
            return
        session = sessions[low]
        session.insert(item)
        for later in sessions[low + 1 : high]:  # the event bridges them: they come after it, in order
            session.keys += later.keys
            session.items += later.items
            later.keys, later.items = [], []
            self._retire(later)
        del sessions[low + 1 : high]
        self._bound(session)
        self._mark(session)

    def _remove(self, item) -> bool:
        ts, identity, sessions = item.meta[0], (item.meta, item.data), self.sessions
        for index, session in enumerate(sessions):
            if session.start <= ts < session.end:
                break
        else:
            return False
        position = session.remove(identity)
        if position < 0:
            return False
        items = session.items
        if not items:
            self._retire(session)
            del sessions[index]
            return True
        if 0 < position < len(items) and items[position].meta[0] - items[position - 1].meta[0] >= self.gap:
            later = OpenWindow(items[position].meta[0], 0)
            later.keys, later.items = session.keys[position:], items[position:]
            del session.keys[position:], items[position:]
            self._bound(later)
            sessions.insert(index + 1, later)
            self._mark(later)
        self._bound(session)
        self._mark(session)
        return True

    def _bound(self, session):
        """Set the session's bounds from its items."""
        start, end = session.items[0].meta[0], session.items[-1].meta[0] + self.gap
        if start != session.start or end != session.end:
            session.start, session.end = start, end
            session.meta = session.prefix = None

    def _forget(self, time):
        self.sessions = [session for session in self.sessions if session.end - 1 > time]

    @classmethod
    def load(cls, dumped, gap: int) -> "SessionWindows":
        key_data, windows, pending = dumped
        bucket = cls(key_data, gap)
        bucket.sessions = bucket._load(windows, pending)
        return bucket


class Tumbling:
    """Windows `[k * size, (k + 1) * size)`."""

    kind = "tumbling"

    def __init__(self, size: int):
        self.size = size
        self.slide = size

    def starts(self, ts: int) -> range:
        """The starts of the windows holding `ts`, latest first."""
        slide = self.slide
        last = ts - ts % slide
        return range(last, ts - self.size, -slide)

    def new_bucket(self) -> FixedWindows:
        return FixedWindows(None, self)

    def load_bucket(self, dumped) -> FixedWindows:
        return FixedWindows.load(dumped, self)

    def describe(self) -> str:
        return f"tumbling {self.size} ms"


class Hopping(Tumbling):
    """Windows `[k * slide, k * slide + size)`: an event is in every one that holds its time."""

    kind = "hopping"

    def __init__(self, size: int, slide: int):
        super().__init__(size)
        self.slide = slide

    def describe(self) -> str:
        return f"hopping {self.size} ms every {self.slide} ms"


class Sessions:
    """A key's events less than `gap` apart share a session."""

    kind = "session"

    def __init__(self, gap: int):
        self.gap = gap

    def new_bucket(self) -> SessionWindows:
        return SessionWindows(None, self.gap)

    def load_bucket(self, dumped) -> SessionWindows:
        return SessionWindows.load(dumped, self.gap)

    def describe(self) -> str:
        return f"session gap {self.gap} ms"


_RESULT_HEADER = b"\x84" + pack("key")  # a map of four entries, then its first key
_START, _END, _VALUE = pack("start"), pack("end"), pack("value")


class WindowOperator(KeyedOperator):
    """Folds each window of each `key(payload)` with an `Aggregate`, as `windows` (Tumbling, Hopping or
    Sessions) places events in windows; one result per (key, window) holding an event.

    >>> from flamespark.core.items import Item, Meta
    >>> from operators.aggregates import Aggregate
    >>> count = WindowOperator("per_10", lambda word: word, Tumbling(10), Aggregate.count())
    >>> state = count.new_state()
    >>> [r.payload for r in count.process(Item(Meta(3, "s", 0, (0,)), "a", b"\\xa1a"), state)]
    [{'key': 'a', 'start': 0, 'end': 10, 'value': 1}]
    >>> [(r.tombstone, r.payload["value"]) for r in count.process(Item(Meta(1, "s", 0, (1,)), "a", b"\\xa1a"), state)]
    [(True, 1), (False, 2)]
    """

    kind = "window"

    def __init__(self, name, key, windows, aggregate):
        super().__init__(name, key)
        self.windows = windows
        self.aggregate = aggregate

    def new_bucket(self) -> WindowBucket:
        return self.windows.new_bucket()

    def load_bucket(self, dumped) -> WindowBucket:
        return self.windows.load_bucket(dumped)

    def dump_bucket(self, bucket: WindowBucket) -> list:
        return bucket.dump()

    def combine(self, bucket, window) -> Item:
        """A window's result: its aggregate over its items, folding on from what it folded before."""
        items, aggregate = window.items, self.aggregate
        folded = window.folded
        if folded:
            acc, arrival = window.acc, window.arrival
        else:
            acc, arrival = aggregate.start(), 0.0
        acc = aggregate.fold(acc, items, folded, self.failure)
        for index in range(folded, len(items)):
            if items[index].arrival > arrival:
                arrival = items[index].arrival
        window.acc, window.folded, window.arrival = acc, len(items), arrival
        value = self._finished(acc, items[-1]) if aggregate.finishes else acc
        if window.meta is None:
            self._place(bucket, window)
        payload = {"key": bucket.key, "start": window.start, "end": window.end, "value": value}
        try:
            data = window.prefix + pack(value)  # `pack(payload)`, of which the window keeps all but the value's
        except (TypeError, ValueError, OverflowError):
            data = encode(payload, self.name, items[-1].meta, "a window's value")  # raises, naming the event
        if type(value) not in IMMUTABLE or type(bucket.key) not in IMMUTABLE:
            # What leaves must not change with the accumulator (which `add` may change in place) or the key.
            payload = unpack(data)
        return Item(window.meta, payload, data, False, arrival)

    def _place(self, bucket, window):
        """Set the window's result meta, `(end - 1, operator, hash of key and start)`, and the encoding of its
        result's payload up to the value (as `pack` encodes a dict: a map header, then each key and value)."""
        if bucket.key_data is None:
            bucket.key_data = self.key_of(window.items[0])
            bucket.key = unpack(bucket.key_data)
        start, end = window.start, window.end
        window.meta = new_meta(Meta, (end - 1, self.name, event_tiebreak(bucket.key_data + pack(start))))
        window.prefix = b"".join((_RESULT_HEADER, bucket.key_data, _START, pack(start), _END, pack(end), _VALUE))

    def _finished(self, acc, last):
        try:
            return self.aggregate.finish(acc)
        except FlameSparkError:
            raise
        except Exception as exc:
            raise self.failure("finish", exc, last) from exc
