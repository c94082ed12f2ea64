"""Event-time windows per key: tumbling, hopping and session windows, each made into results by an `Aggregate`.

A window's result leaves when the punctuation passes its last instant,
`end - 1`, the event time of the result: no event can change it any more,
so the barrier releases it at that same punctuation. With `early` (a run
that keeps a changelog), a window also sends its value so far at the end
of every step that changed it, with a tombstone for the value it sent
before, so that the changelog shows the window grow; the value sent last
is then the result.

What a window keeps depends on its aggregate. An incremental one (count,
sum, mean) keeps only its accumulator, which takes each item and
tombstone as a delta: no event is held, and a late event costs what an
event in order costs. A folding one (min, max, collect, a user's
`aggregate`) keeps the window's items in meta order and folds them when
its result is due, carrying on from what it folded before for items
appended in order. Session windows keep their items, as a tombstone can
split a session in two.

A result's meta is `(end - 1, operator name, tie-break of key and start)`:
what made it, and in which order, does not change it, so a result made
again equal to the last one sent is no change. Its payload is
`{"key": k, "start": s, "end": e, "value": v}`.

>>> from flamespark.core.batch import Batch
>>> from flamespark.core.items import Meta
>>> count = WindowOperator("per_10", lambda word: word, Tumbling(10), Aggregate.count())
>>> state = count.new_state()
>>> count.take(Batch([Meta(3, "s", 0, (0,)), Meta(1, "s", 0, (1,))], ["a", "a"], [b"", b""], [1, 1], [0.0, 0.0]), state)
>>> count.punctuate(9, state).payloads
[{'key': 'a', 'start': 0, 'end': 10, 'value': 2}]
"""
from bisect import bisect_left, bisect_right
from collections import Counter
from heapq import heappop, heappush
from math import inf

from flamespark.core.batch import Batch
from flamespark.core.codec import pack, unpack
from flamespark.core.errors import FlameSparkError, InternalError, UserFunctionError
from flamespark.core.items import Item, Meta, encode, event_tiebreak, new_meta
from operators import early_tombstones
from operators.aggregates import IMMUTABLE, Aggregate, Count
from operators.keyed import KeyedOperator
from operators.statelog import tombstone


class Pane:
    """One window of one key, for an incremental aggregate: its net number of rows (`weight`), accumulator,
    latest arrival among its rows, and the result last sent (None before the first, and without `early`)."""

    __slots__ = ("weight", "acc", "arrival", "sent")

    def __init__(self, acc):
        self.weight = 0
        self.acc = acc
        self.arrival = 0.0
        self.sent = None

    def dump(self, aggregate) -> list:
        return [self.weight, aggregate.dump_acc(self.acc), self.arrival, _dumped_item(self.sent)]

    @classmethod
    def load(cls, dumped, aggregate) -> "Pane":
        pane = cls(aggregate.load_acc(dumped[1]))
        pane.weight, pane.arrival, pane.sent = dumped[0], dumped[2], _loaded_item(dumped[3])
        return pane


class OpenWindow:
    """One window of one key that keeps its items in meta order (`keys` holds their identities): how many of them
    `acc` has folded, the latest arrival among its rows, the tombstones waiting for their items (`pending`) and
    the result last sent."""

    __slots__ = ("start", "end", "keys", "items", "acc", "folded", "arrival", "pending", "sent")

    def __init__(self, start: int, end: int):
        self.start = start
        self.end = end
        self.keys = []
        self.items = []
        self.acc = None
        self.folded = 0
        self.arrival = 0.0
        self.pending = None
        self.sent = None

    @property
    def weight(self) -> int:
        return len(self.items)

    def add(self, item):
        """Add an item or a tombstone (which removes one item of its identity, or waits for it)."""
        if item.arrival > self.arrival:
            self.arrival = item.arrival
        identity = (item.meta, item.data)
        if item.tombstone:
            if self._remove(identity) < 0:
                self.pending = early_tombstones.wait(self.pending, identity)
        elif not (self.pending and early_tombstones.cancel(self.pending, identity)):
            self.insert(item)

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

    def _remove(self, identity) -> int:
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
        return [self.start, self.end, [_dumped_item(item) for item in self.items],
                self.arrival, early_tombstones.dump(self.pending), _dumped_item(self.sent)]

    @classmethod
    def load(cls, dumped) -> "OpenWindow":
        start, end, items, arrival, pending, sent = dumped
        window = cls(start, end)
        for dumped_item in items:
            item = _loaded_item(dumped_item)
            window.keys.append((item.meta, item.data))
            window.items.append(item)
        window.arrival, window.pending, window.sent = arrival, early_tombstones.load(pending), _loaded_item(sent)
        return window


def _dumped_item(item):
    return None if item is None else [item.meta.dump(), item.data, item.arrival]


def _loaded_item(dumped):
    if dumped is None:
        return None
    meta, data, arrival = dumped
    return Item(Meta.load(meta), unpack(data), data, False, arrival)


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

    def describe(self) -> str:
        return f"session gap {self.gap} ms"


class FixedState:
    """A tumbling or hopping window operator's state on the local engine: its open windows by end, then key
    encoding (`by_end`), and a heap of those ends, so that a punctuation closes what it passes and nothing else.
    An engine with a state store keeps the same by end (see `close`)."""

    def __init__(self):
        self.by_end = {}
        self._ends = []

    def windows(self, end: int) -> dict:
        """The windows ending at `end`, by key encoding (a new dict if there are none)."""
        windows = self.by_end.get(end)
        if windows is None:
            windows = self.by_end[end] = {}
            heappush(self._ends, end)
        return windows

    def close(self, time) -> list:
        """Remove and return, as `(end, windows by key encoding)` in time order, the windows whose last instant is
        at or before `time`."""
        ends, closed = self._ends, []
        while ends and ends[0] - 1 <= time:
            end = heappop(ends)
            closed.append((end, self.by_end.pop(end)))
        return closed

    def __len__(self):
        return sum(len(windows) for windows in self.by_end.values())


class SessionState:
    """A session window operator's state on the local engine: each key's sessions (`SessionWindows`) by key
    encoding, and a heap of `(end, key encoding)` under which a punctuation may find a session to close (an entry
    whose session has moved on is passed over)."""

    def __init__(self):
        self.by_key = {}
        self._due = []

    def sessions(self, key_data: bytes) -> "SessionWindows":
        sessions = self.by_key.get(key_data)
        if sessions is None:
            sessions = self.by_key[key_data] = SessionWindows()
        return sessions

    def due_at(self, end: int, key_data: bytes):
        """Note that the key's session ending at `end` closes at the punctuation passing `end - 1`."""
        heappush(self._due, (end, key_data))

    def close(self, time) -> list:
        """Remove and return, as `(session, key encoding)` in time order, the sessions whose last instant is at or
        before `time`."""
        due, closed = self._due, []
        while due and due[0][0] - 1 <= time:
            end, key_data = heappop(due)
            sessions = self.by_key.get(key_data)
            if sessions is None:
                continue
            for session in sessions.closing(time):
                closed.append((session, key_data))
            if early_tombstones.orphans(sessions.pending, time):
                raise InternalError(f"internal error: a session window holds tombstone(s) below punctuation {time} "
                                    f"whose items never arrived")
            if not sessions.windows and not sessions.pending:
                del self.by_key[key_data]
        return closed

    def __len__(self):
        return sum(len(sessions.windows) for sessions in self.by_key.values())


class SessionWindows:
    """The sessions of one key, in time order: a session is `[first ts, last ts + gap)`, and sessions lie at
    least `gap` apart (from one's last event to the next one's first). Tombstones whose items have not come yet
    wait in `pending` and cancel their items on arrival."""

    __slots__ = ("windows", "pending")

    def __init__(self):
        self.windows = []
        self.pending = None

    @property
    def empty(self) -> bool:
        return not self.windows and not self.pending

    def add(self, item, gap: int, changed: list, retired: list):
        """Add an item or a tombstone; the sessions it changes go to `changed`, those it merges away or empties
        to `retired`."""
        identity = (item.meta, item.data)
        if item.tombstone:
            if not self._remove(item, identity, gap, changed, retired):
                self.pending = early_tombstones.wait(self.pending, identity)
        elif not (self.pending and early_tombstones.cancel(self.pending, identity)):
            self._insert(item, gap, changed, retired)

    def _insert(self, item, gap, changed, retired):
        ts, sessions = item.meta[0], self.windows
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
        else:
            session = sessions[low]
            for later in sessions[low + 1:high]:  # the event bridges them: they come after it, in order
                session.keys += later.keys
                session.items += later.items
                session.arrival = max(session.arrival, later.arrival)
                later.keys, later.items = [], []
                retired.append(later)
            del sessions[low + 1:high]
        session.add(item)
        _bound(session, gap)
        changed.append(session)

    def _remove(self, item, identity, gap, changed, retired) -> bool:
        ts, sessions = item.meta[0], self.windows
        for index, session in enumerate(sessions):
            if session.start <= ts < session.end:
                break
        else:
            return False
        position = session._remove(identity)
        if position < 0:
            return False
        if item.arrival > session.arrival:
            session.arrival = item.arrival
        items = session.items
        if not items:
            del sessions[index]
            retired.append(session)
            return True
        if 0 < position < len(items) and items[position].meta[0] - items[position - 1].meta[0] >= gap:
            later = OpenWindow(items[position].meta[0], 0)
            later.keys, later.items, later.arrival = session.keys[position:], items[position:], session.arrival
            del session.keys[position:], items[position:]
            _bound(later, gap)
            sessions.insert(index + 1, later)
            changed.append(later)
        _bound(session, gap)
        changed.append(session)
        return True

    def closing(self, time) -> list:
        """Remove and return the sessions whose last instant is at or before `time`."""
        closed = [session for session in self.windows if session.end - 1 <= time]
        if closed:
            self.windows = [session for session in self.windows if session.end - 1 > time]
        return closed

    def dump(self) -> list:
        return [[session.dump() for session in self.windows], early_tombstones.dump(self.pending)]

    @classmethod
    def load(cls, dumped) -> "SessionWindows":
        windows, pending = dumped
        sessions = cls()
        sessions.windows = [OpenWindow.load(window) for window in windows]
        sessions.pending = early_tombstones.load(pending)
        return sessions


def _bound(session, gap: int):
    """Set the session's bounds from its items."""
    session.start, session.end = session.items[0].meta[0], session.items[-1].meta[0] + gap


_RESULT_HEADER = b"\x84" + pack("key")  # a map of four entries, then its first key
_START, _END, _VALUE = pack("start"), pack("end"), pack("value")


class WindowOperator(KeyedOperator):
    """Makes each window of each `key(payload)` into a result with an `Aggregate`, as `windows` (Tumbling,
    Hopping or Sessions) places events in windows: one result per (key, window) holding an event, when the
    punctuation passes the window; with `early`, also its value so far after every step that changed it (see
    the module's docstring)."""

    kind = "window"

    def __init__(self, name, key, windows, aggregate: Aggregate, early: bool = False):
        super().__init__(name, key)
        self.windows = windows
        self.aggregate = aggregate
        self.early = early
        self.sessions = isinstance(windows, Sessions)
        self.panes = aggregate.incremental and not self.sessions
        self.counts = self.panes and isinstance(aggregate, Count)

    def new_state(self):
        return SessionState() if self.sessions else FixedState()

    def load_window(self, dumped):
        """A window of a fixed window's state from its `dump_window`, for engines that keep windows in a state
        store."""
        return Pane.load(dumped, self.aggregate) if self.panes else OpenWindow.load(dumped)

    def dump_window(self, window) -> list:
        """A window of a fixed window's state as msgpack-able lists, which `load_window` takes back."""
        return window.dump(self.aggregate) if self.panes else window.dump()

    def new_bucket(self) -> "SessionWindows":
        """A key's sessions, for engines that keep them per key in a state store (with `load_bucket` and
        `dump_bucket`)."""
        return SessionWindows()

    def load_bucket(self, dumped) -> "SessionWindows":
        return SessionWindows.load(dumped)

    def dump_bucket(self, sessions) -> list:
        return sessions.dump()

    def take(self, batch, state, keys: list | None = None):
        """Apply a batch's rows to their windows; with `early`, returns the changed windows' values (and the
        retractions of those they replace), else nothing."""
        if not batch:
            return None
        if keys is None:
            keys = self.keys_of(batch)
        if self.sessions:
            changed = self._take_sessions(batch, keys, state)
        elif self.counts and not self.early and -1 not in batch.weights:
            changed = self._count_panes(batch, keys, state)
        elif self.panes:
            changed = self._take_panes(batch, keys, state)
        else:
            changed = self._take_items(batch, keys, state)
        return self._early(changed) if self.early else None

    def _take_panes(self, batch, keys, state):
        """Step each row into the accumulator of each window holding it; returns the windows changed, when `early`
        (see `_early`)."""
        size, slide, aggregate = self.windows.size, self.windows.slide, self.aggregate
        step, start_acc, windows_ending = aggregate.step, aggregate.start, state.windows
        changed = {} if self.early else None
        causes = batch.row_causes()
        row = 0
        try:
            for row, (meta, payload, weight, arrival, key_data) in enumerate(
                    zip(batch.metas, batch.payloads, batch.weights, batch.arrivals, keys)):
                ts = meta[0]
                start = ts - ts % slide
                while start > ts - size:
                    end = start + size
                    windows = windows_ending(end)
                    pane = windows.get(key_data)
                    if pane is None:
                        pane = windows[key_data] = Pane(start_acc())
                    pane.weight += weight
                    pane.acc = step(pane.acc, payload, weight)
                    if arrival > pane.arrival:
                        pane.arrival = arrival
                    if changed is not None:
                        changed.setdefault((end, key_data), (pane, causes[row]))
                    start -= slide
        except FlameSparkError:
            raise
        except Exception as exc:
            raise self.failure(aggregate.role, exc, batch.item(row)) from exc
        return changed

    def _count_panes(self, batch, keys, state):
        """`_take_panes` for a count of items alone: each window's rows counted at once, with no call per row."""
        size, slide, windows_ending = self.windows.size, self.windows.slide, state.windows
        arrivals = batch.arrivals
        times = [meta[0] for meta in batch.metas]
        lasts = [ts - ts % slide for ts in times]  # the start of each row's latest window
        counts, latest = Counter(), {}
        varying = min(arrivals) < max(arrivals)  # else every pane takes the batch's one arrival
        for back in range(0, size, slide):  # each row's window that starts `back` before its latest
            if size == slide:  # tumbling: a row's one window is its latest
                rows, pairs = range(len(times)), [(last + size, key) for last, key in zip(lasts, keys)]
            else:
                rows = [row for row in range(len(times)) if lasts[row] - back > times[row] - size]
                pairs = [(lasts[row] - back + size, keys[row]) for row in rows]
            counts.update(pairs)
            if varying:
                for pair, row in zip(pairs, rows):
                    if arrivals[row] > latest.get(pair, -inf):
                        latest[pair] = arrivals[row]
        arrival = max(arrivals)
        for (end, key_data), count in counts.items():
            windows = windows_ending(end)
            pane = windows.get(key_data)
            if pane is None:
                pane = windows[key_data] = Pane(0)
            pane.weight += count
            pane.acc += count
            pane_arrival = latest.get((end, key_data), arrival)
            if pane_arrival > pane.arrival:
                pane.arrival = pane_arrival
        return None

    def _take_items(self, batch, keys, state):
        """Add each row to each window holding it; returns the windows changed, when `early` (see `_early`)."""
        starts, size, windows_ending = self.windows.starts, self.windows.size, state.windows
        changed = {} if self.early else None
        for item, key_data, cause in zip(batch.items(), keys, batch.row_causes()):
            for start in starts(item.meta[0]):
                windows = windows_ending(start + size)
                window = windows.get(key_data)
                if window is None:
                    window = windows[key_data] = OpenWindow(start, start + size)
                window.add(item)
                if changed is not None:
                    changed.setdefault((start + size, key_data), (window, cause))
        return changed

    def _take_sessions(self, batch, keys, state):
        """Add each row to its key's sessions; returns the sessions changed, when `early` (see `_early`)."""
        gap = self.windows.gap
        touched = {}
        for item, key_data, cause in zip(batch.items(), keys, batch.row_causes()):
            changed, retired, causes = touched.get(key_data) or touched.setdefault(key_data, ([], [], {}))
            before = len(changed), len(retired)
            state.sessions(key_data).add(item, gap, changed, retired)
            for session in changed[before[0]:] + retired[before[1]:]:
                causes.setdefault(id(session), cause)  # the first row to change it started the change
        for key_data, (changed, _, _) in touched.items():
            for end in {session.end for session in changed if session.items}:
                state.due_at(end, key_data)
        return touched if self.early else None

    def punctuate(self, time, state):
        """The results of the windows the punctuation `time` passes, which it forgets (with `early`, the value
        each sent last already is its result)."""
        if self.sessions:
            closed = [(session.end, key_data, session) for session, key_data in state.close(time)]
        else:
            closed = [(end, key_data, window) for end, windows in state.close(time)
                      for key_data, window in windows.items()]
        made = []
        for end, key_data, window in closed:
            if window.weight < 0 or (not self.panes and window.pending):
                raise InternalError(f"internal error: operator {self.name!r} holds tombstone(s) below punctuation "
                                    f"{time} whose items never arrived")
            if not self.early and window.weight > 0:
                made.append(self._result(end, key_data, window))
        return Batch.of_items(made) if made else None

    def _early(self, changed) -> Batch | None:
        """The values of the windows changed in a batch that differ from what each sent last, after tombstones for
        those, and tombstones for the windows that vanished; each carries the cause of the first row of the batch
        that changed its window. `changed` maps `(end, key encoding)` to `(window, cause)`, for sessions a key
        encoding to `(sessions changed, sessions retired, the cause of each by id)`."""
        out, made = [], []
        out_causes, made_causes = [], []
        if self.sessions:
            for key_data, (windows, retired, causes) in changed.items():
                gone = set(map(id, retired))
                for session in retired:
                    if session.sent is not None:
                        out.append(tombstone(session.sent))
                        out_causes.append(causes[id(session)])
                        session.sent = None
                for session in dict.fromkeys(windows):  # a session may change more than once in a batch
                    if id(session) not in gone:
                        self._resend(session.end, key_data, session, causes[id(session)], out, made, out_causes,
                                     made_causes)
        else:
            for (end, key_data), (window, cause) in changed.items():
                self._resend(end, key_data, window, cause, out, made, out_causes, made_causes)
        if made:
            made, made_causes = _cancel_equal(out, made, out_causes, made_causes)
        out += made
        return Batch.of_items(out, out_causes + made_causes) if out else None

    def _resend(self, end, key_data, window, cause, out: list, made: list, out_causes: list, made_causes: list):
        """Add to `out` the tombstone of what `window` sent last, unless its new value is the same, and to `made`
        its new value, if it holds anything; each with `cause` in the list beside it."""
        new = self._result(end, key_data, window) if window.weight > 0 else None
        old = window.sent
        if old is not None:
            if new is not None and old.data == new.data and old.meta == new.meta:
                return
            out.append(tombstone(old))
            out_causes.append(cause)
        window.sent = new
        if new is not None:
            made.append(new)
            made_causes.append(cause)

    def _result(self, end, key_data, window) -> Item:
        """The window's result item, at `end - 1`."""
        start = end - self.windows.size if not self.sessions else window.start
        key = unpack(key_data)
        value = self._value(window, end, key)
        meta = new_meta(Meta, (end - 1, self.name, event_tiebreak(key_data + pack(start))))
        try:
            data = b"".join((_RESULT_HEADER, key_data, _START, pack(start), _END, pack(end), _VALUE, pack(value)))
        except (TypeError, ValueError, OverflowError):
            payload = {"key": key, "start": start, "end": end, "value": value}
            data = encode(payload, self.name, meta, "a window's value")  # raises, naming the window
        if type(value) in IMMUTABLE and type(key) in IMMUTABLE:
            payload = {"key": key, "start": start, "end": end, "value": value}
        else:  # what leaves must not change with the accumulator (which `add` may change in place)
            payload = unpack(data)
        return Item(meta, payload, data, False, window.arrival)

    def _value(self, window, end: int, key):
        aggregate = self.aggregate
        if self.panes:
            acc = window.acc
        else:
            items, folded = window.items, window.folded
            acc = window.acc if folded else aggregate.start()
            acc = aggregate.fold(acc, items, folded, self.failure)
            window.acc, window.folded = acc, len(items)
        if not aggregate.finishes and not aggregate.incremental:
            return acc
        try:
            return aggregate.finish(acc)
        except FlameSparkError:
            raise
        except Exception as exc:
            if not self.panes:
                raise self.failure("finish", exc, window.items[-1]) from exc
            raise UserFunctionError(f"the {aggregate.kind} of {self.kind} operator {self.name!r} raised "
                                    f"{type(exc).__name__}: {exc} (on the window ending at {end} of key "
                                    f"{key!r})") from exc


def _cancel_equal(retracted: list, made: list, retracted_causes: list, made_causes: list) -> tuple:
    """Drop the new results equal to a retracted one (a session split and merged back, a window emptied and
    filled again in one step), with that retraction and their causes; returns the new results left, with their
    causes."""
    waiting = {}
    for index, item in enumerate(retracted):
        waiting.setdefault((item.meta, item.data), []).append(index)
    kept, kept_causes = [], []
    for item, cause in zip(made, made_causes):
        indexes = waiting.get((item.meta, item.data))
        if indexes:
            retracted[indexes.pop()] = None
        else:
            kept.append(item)
            kept_causes.append(cause)
    retracted_causes[:] = [cause for item, cause in zip(retracted, retracted_causes) if item is not None]
    retracted[:] = [item for item in retracted if item is not None]
    return kept, kept_causes
