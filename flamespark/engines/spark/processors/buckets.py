"""Boundary operators' state in a stage's map state, read and written as far as a batch touches it.

A keyed operator's buckets are in one entry per key (prefix b): the entry
holds the buckets of every operator of the stage that has one for that key
(operators keyed alike, as two counts per word, share it), so a batch reads
and writes each key it touches once, whichever of the stage's operators
touch it: its state I/O follows the keys it touches, not the state held.
One entry per key beats small key groups: a batch's keys are spread over
the key space, so a group would cost the same calls and read and write its
neighbours too. A tumbling or hopping window keeps one entry per window end
(prefix e and the operator's place in the stage), holding every key's
window of that end, each packed apart: a batch reads the ends its rows
reach and those its punctuation closes, and unpacks only the windows it
touches. A session window keeps each key's sessions in the key's entry, and
per end the keys whose sessions may close when the punctuation passes it
(prefix d), so that a punctuation reads only the keys it may close.

A keyed operator or session window reads the entries of the keys that
reach it just before it takes them, in one pipelined exchange with the
state store (`pipelined.PipelinedMap`), and the batch writes back what
changed at its end (`StageState.save`).
"""
import msgpack

from flamespark.core.errors import InternalError
from flamespark.engines.spark.processors.blob import BUCKETS_PREFIX, DUE_PREFIX, WINDOWS_PREFIX
from flamespark.engines.spark.processors.pipelined import PipelinedMap
from operators import early_tombstones
from operators.store import KeyedState

LAYOUT = ("one map entry per key and stage (prefix b), collected when touched; steps without their outputs, each "
          "packed apart; fixed windows one entry per end (prefix e, operator), each key's window packed apart (a "
          "sum's in whole units of 2**-1074, as bytes); "
          "sessions in the key's entry, keys due per end (prefix d, operator)")


def bucket_map(store: PipelinedMap) -> PipelinedMap:
    """The stage's keyed buckets, in its map state `store` (see `blob.BlobProcessor`)."""
    return store.prefixed(BUCKETS_PREFIX)


class _Entries:
    """The entries of the keys a batch touches, each read once: `{operator index: bucket dump}` per key.

    `store` offers `get_many(user keys)` and `write(updates, removals)`, as `PipelinedMap` does.
    """

    def __init__(self, store):
        self._store = store
        self._entries = {}
        self._read = {}  # key -> its blob as read, None if absent

    def read(self, keys):
        """Read the entries of `keys` not read yet, in one pipelined exchange."""
        keys = [key for key in dict.fromkeys(keys) if key not in self._entries]
        for key, row in zip(keys, self._store.get_many([(key,) for key in keys])):
            blob = self._read[key] = None if row is None else row[0]
            self._entries[key] = {} if blob is None else msgpack.unpackb(blob, strict_map_key=False)

    def of(self, key) -> dict:
        if key not in self._entries:
            self.read([key])
        return self._entries[key]

    def save(self):
        """Write back the entries whose encoding changed, remove those left empty."""
        updates, removals = [], []
        for key, entry in self._entries.items():
            read = self._read[key]
            if not entry:
                if read is not None:
                    removals.append((key,))
                continue
            blob = msgpack.packb(entry)
            if blob != read:
                updates.append(((key,), (blob,)))
        if updates or removals:
            self._store.write(updates, removals)
        self._entries.clear()
        self._read.clear()


class StoreBuckets(KeyedState):
    """One keyed operator's buckets on one shard for one batch, in the stage's entries under `index`.

    A bucket is decoded when first asked for and put back into its entry at
    `save`. A punctuation collects the buckets the batch touched: what no
    punctuation can change is forgotten when a batch next touches its key,
    so a batch reads no key its rows do not reach (collecting one would cost
    a read and a write).
    """

    def __init__(self, entries: _Entries, index: int, operator):
        super().__init__()
        self._entries = entries
        self._index = index
        self._load = operator.load_bucket
        self._dump = operator.dump_bucket
        self.new_bucket = operator.new_bucket
        self._held = self.watched = {}  # key -> bucket, or None where there is none: `save` writes each back

    def get(self, key):
        if key in self._held:
            return self._held[key]
        dumped = self._entries.of(key).get(self._index)
        bucket = self._held[key] = None if dumped is None else self._load(dumped)
        return bucket

    def put(self, key, bucket):
        self._held[key] = bucket

    def collectable(self, time):
        return [key for key, bucket in self._held.items() if bucket is not None]

    def read(self, keys):
        """Read the entries of `keys` not read yet, in one pipelined exchange."""
        self._entries.read(keys)

    def save(self):
        """Put the buckets back into their entries, or take the emptied ones out."""
        for key, bucket in self._held.items():
            entry = self._entries.of(key)
            if bucket is None or bucket.empty:
                entry.pop(self._index, None)
            else:
                entry[self._index] = self._dump(bucket)
        self._held.clear()


class _StoredWindows:
    """The windows of one end, by key encoding, as a window operator's `take` uses a dict of them: each decoded
    from its blob when first asked for, and packed again at `blobs` only if it was."""

    __slots__ = ("_blobs", "_windows", "_operator")

    def __init__(self, blobs: dict, operator):
        self._blobs = blobs
        self._windows = {}
        self._operator = operator  # the window operator, which loads and dumps its windows

    def get(self, key):
        window = self._windows.get(key)
        if window is None:
            blob = self._blobs.pop(key, None)
            if blob is not None:
                window = self._windows[key] = self._operator.load_window(msgpack.unpackb(blob, strict_map_key=False))
        return window

    def __setitem__(self, key, window):
        self._windows[key] = window

    def items(self):
        for key in list(self._blobs):
            self.get(key)
        return self._windows.items()

    def __len__(self):
        return len(self._blobs) + len(self._windows)

    @property
    def changed(self) -> bool:
        """Whether a window was decoded or added (and may have changed)."""
        return bool(self._windows)

    def blobs(self) -> dict:
        """Every window's blob: those never decoded as they were read, the others packed again."""
        blobs = dict(self._blobs)
        blobs.update((key, msgpack.packb(self._operator.dump_window(window))) for key, window in self._windows.items())
        return blobs


class StoredFixedState:
    """A tumbling or hopping window operator's state on one shard for one batch (what `windows.FixedState` is on
    the local engine): one map entry per window end, under `store`, holding every key's window of that end, each
    packed apart; and the ends open, which the shard's value keeps (`ends`, as `save` returns them).

    A batch reads the entry of each end its rows reach, and of each end its
    punctuation closes, once; it writes back only those, and in them packs
    again only the windows it decoded, which are those it touched.
    """

    def __init__(self, store, ends: list | None, operator):
        self._store = store
        self._ends = set(ends or ())
        self._stored = set(self._ends)  # the ends with an entry in the store
        self._operator = operator
        self._read = {}  # end -> _StoredWindows, as read (or begun) in this batch
        self._closed = []

    def windows(self, end: int) -> _StoredWindows:
        windows = self._read.get(end)
        if windows is None:
            row = self._store.getValue((end,)) if end in self._stored else None
            blobs = {} if row is None else msgpack.unpackb(row[0], strict_map_key=False)
            windows = self._read[end] = _StoredWindows(blobs, self._operator)
            self._ends.add(end)
        return windows

    def close(self, time) -> list:
        """Remove and return, as `(end, windows by key encoding)` in time order, the windows whose last instant is
        at or before `time`."""
        closing = sorted(end for end in self._ends if end - 1 <= time)
        unread = [end for end in closing if end not in self._read and end in self._stored]
        for end, row in zip(unread, self._store.get_many([(end,) for end in unread])):
            blobs = {} if row is None else msgpack.unpackb(row[0], strict_map_key=False)
            self._read[end] = _StoredWindows(blobs, self._operator)
        closed = [(end, self._read.pop(end)) for end in closing]
        self._ends.difference_update(closing)
        self._closed += closing
        return closed

    def save(self) -> list:
        """Write back the entries the batch changed, remove those it closed; returns the ends open."""
        updates = [((end,), (msgpack.packb(windows.blobs()),)) for end, windows in self._read.items()
                   if windows.changed and len(windows)]
        self._store.write(updates, [(end,) for end in self._closed if end in self._stored])
        self._stored = {end for end in self._stored if end not in self._closed} | {key[0] for key, _ in updates}
        self._read.clear()
        self._closed = []
        return sorted(self._ends)


class StoredSessionState:
    """A session window operator's state on one shard for one batch (what `windows.SessionState` is on the local
    engine): each key's sessions in the stage's entries (as `StoreBuckets` keeps a key's bucket), and, per end
    time, the keys whose sessions may close when the punctuation passes it, in map entries under `due`, whose
    times the shard's value keeps (`times`, as `save` returns them)."""

    def __init__(self, entries, index: int, due, times: list | None, operator):
        self._buckets = StoreBuckets(entries, index, operator)
        self._due = due
        self._times = set(times or ())
        self._noted = {}  # end -> keys noted due at it in this batch

    def read(self, keys):
        self._buckets.read(keys)

    def sessions(self, key_data: bytes):
        sessions = self._buckets.get(key_data)
        if sessions is None:
            sessions = self._buckets.new_bucket()
            self._buckets.put(key_data, sessions)
        return sessions

    def due_at(self, end: int, key_data: bytes):
        self._noted.setdefault(end, set()).add(key_data)

    def close(self, time) -> list:
        """Remove and return, as `(session, key encoding)` in time order, the sessions whose last instant is at or
        before `time`."""
        self._write_due()
        closing = sorted(end for end in self._times if end - 1 <= time)
        keys = {key for row in self._due.get_many([(end,) for end in closing]) if row is not None
                for key in msgpack.unpackb(row[0])}
        self._due.write([], [(end,) for end in closing])
        self._times.difference_update(closing)
        self._buckets.read(keys)
        closed = []
        for key_data in keys:
            sessions = self._buckets.get(key_data)
            if sessions is None:
                continue
            closed += [(session, key_data) for session in sessions.closing(time)]
            if early_tombstones.orphans(sessions.pending, time):
                raise InternalError(f"internal error: a session window holds tombstone(s) below punctuation {time} "
                                    f"whose items never arrived")
            self._buckets.put(key_data, sessions)
        closed.sort(key=lambda pair: pair[0].end)
        return closed

    def _write_due(self):
        """Add the keys noted due in this batch to their ends' entries."""
        if not self._noted:
            return
        ends = list(self._noted)
        known = [end for end in ends if end in self._times]
        rows = dict(zip(known, self._due.get_many([(end,) for end in known])))
        updates = []
        for end in ends:
            row = rows.get(end)
            keys = set() if row is None else set(msgpack.unpackb(row[0]))
            updates.append(((end,), (msgpack.packb(sorted(keys | self._noted[end])),)))
        self._due.write(updates, [])
        self._times.update(ends)
        self._noted.clear()

    def save(self) -> list:
        """Put the sessions back into their entries and the keys noted due into theirs; returns the due times."""
        self._write_due()
        self._buckets.save()
        return sorted(self._times)


class StageState:
    """The states of one stage's boundary operators on one shard for one batch, over the stage's MapState `store`:
    a keyed operator's and a session window's buckets in one entry per key (`bucket_map`), a fixed window's by
    end, and what the shard's value keeps of them (`index`, as `save` returns it)."""

    def __init__(self, operators: dict, store, index: dict | None = None):
        self.operators = operators
        index = index or {}
        self._entries = _Entries(bucket_map(store))
        self.states = {}
        for position, (name, operator) in enumerate(operators.items()):
            if getattr(operator, "kind", None) == "window" and not operator.sessions:
                state = StoredFixedState(store.prefixed(WINDOWS_PREFIX + bytes([position]), _packed), index.get(name),
                                         operator)
            elif getattr(operator, "kind", None) == "window":
                state = StoredSessionState(self._entries, position, store.prefixed(DUE_PREFIX + bytes([position]),
                                                                                   _packed), index.get(name), operator)
            else:
                state = StoreBuckets(self._entries, position, operator)
            self.states[name] = state

    def read(self, name: str, keys: list):
        """Read, in one pipelined exchange, the entries of `keys` that operator `name` keeps state under."""
        state = self.states[name]
        if isinstance(state, (StoreBuckets, StoredSessionState)):
            state.read(keys)

    def save(self) -> dict:
        """Write back what the batch changed; returns what the shard's value keeps of the states."""
        index = {}
        for name, state in self.states.items():
            saved = state.save()
            if saved is not None:
                index[name] = saved
        self._entries.save()
        return index


def _packed(key) -> bytes:
    return msgpack.packb(key)
