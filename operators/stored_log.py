"""A key's `StateLog` kept in a state store, where a batch decodes only the steps its items reach.

A stored log is its steps, each packed on its own, with their event times
beside them. A Spark batch brings a key items of the last second or two,
while its log holds every step back to the latest punctuation it saw (a
reorder latency's worth), so `StoredLog.load` decodes none of them: steps
stay packed until an item comes at or before their event time, which
decodes them from there on. A batch that only appends to a key and forgets
from its front decodes one step, the last (for the state the next starts
from), and packs only the steps it decoded or added.

>>> from flamespark.core.codec import pack
>>> from flamespark.core.items import Item, Meta
>>> from operators.statelog import NO_STATE, StateLog, Step
>>> def count(item, previous):  # a combine map: the number of items so far
...     state, base = (1, NO_STATE) if previous is None else (previous.state + 1, previous.state_data)
...     return Step(item, item.meta, base, state, pack(state), 0.0, [])
>>> log = StateLog()
>>> for ts in range(10):
...     _ = log.add(Item(Meta(ts, "s", 0, (ts,)), ts, pack(ts)), count)
>>> stored = StoredLog.load(dump_log(log), "count")
>>> _ = stored.add(Item(Meta(10, "s", 0, (10,)), 10, pack(10)), count)
>>> len(stored.packed.times), len(stored.steps), stored.steps[-1].state  # the tenth step decoded only as the base
(10, 1, 11)
"""
from bisect import bisect_left, bisect_right

import msgpack

from flamespark.core.codec import unpack
from flamespark.core.errors import UserFunctionError
from flamespark.core.items import Item, Meta, new_meta
from operators import early_tombstones
from operators.statelog import NO_STATE, StateLog, Step, outputs_digest


class _OtherOutputs(Exception):
    """A stored step's outputs, made again from the same state, differ from those it was stored with."""

    def __init__(self, item):
        super().__init__(item)
        self.item = item


def _decoded(slot, decode):
    """A property that reads the base class's `slot`, filled with `decode(step)` when first read, and sets it."""

    def read(step):
        try:
            return slot.__get__(step)
        except AttributeError:
            value = decode(step)
            slot.__set__(step, value)
            return value

    return property(read, slot.__set__)


def _stored_item(step) -> Item:
    _, data, arrival = step.dumped[:3]
    return Item(step.meta, unpack(data), data, False, arrival)


class StoredStep(Step):
    """A step as `Step.dump()` left it, with its item and state decoded when first read, its outputs made when
    needed."""

    __slots__ = ("dumped",)

    item = _decoded(Step.item, _stored_item)
    state = _decoded(Step.state, lambda step: unpack(step.state_data))

    @property
    def data(self) -> bytes:
        return self.dumped[1]  # without decoding the item

    def __init__(self, dumped: list):
        self.meta = new_meta(Meta, dumped[0])
        self.dumped = dumped
        self.count, self.base, self.state_data, self.arrival = dumped[3:7]

    def dump(self) -> list:
        dumped = self.dumped
        return dumped if dumped[3] == self.count else [*dumped[:3], self.count, *dumped[4:]]

    def made(self, combine) -> list:
        try:
            return Step.outputs.__get__(self)
        except AttributeError:
            pass
        # `update` from the incoming state; the arrival passed on is the step's, which is at least its item's.
        outputs = combine(self.item, Step(None, None, None, unpack(self.base), self.base, self.arrival, ())).outputs
        if outputs_digest(outputs) != self.dumped[7]:
            raise _OtherOutputs(self.item)
        Step.outputs.__set__(self, outputs)
        return outputs


def _base_step(dumped):
    """The base a log's first step starts from, from its dump (`[state_data, arrival]`, or None)."""
    if dumped is None:
        return None
    state_data, arrival = dumped
    return Step(None, None, None, unpack(state_data), state_data, arrival, ())


def _base_dump(step):
    """What is kept of the step a punctuation forgot last: nothing where its state is a new key's."""
    return None if step is None or step.state_data == NO_STATE else [step.state_data, step.arrival]


class _Packed:
    """A log's first steps, still packed: the base they start from (dumped), then each one's event time and the
    length of its encoding, and the encodings one after another."""

    __slots__ = ("base", "times", "lengths", "data")

    def __init__(self, base, times: list, lengths: list, data: bytes):
        self.base = base
        self.times = times
        self.lengths = lengths
        self.data = data

    def last(self) -> StoredStep:
        return self._ending_at(len(self.lengths) - 1, len(self.data))

    def _ending_at(self, index: int, end: int) -> StoredStep:
        """Step `index`, whose encoding ends at byte `end`."""
        return StoredStep(msgpack.unpackb(self.data[end - self.lengths[index]:end]))

    def split(self, index: int) -> tuple:
        """The steps before `index`, still packed, and those from it on, decoded."""
        offset = sum(self.lengths[:index])
        unpacker = msgpack.Unpacker(max_buffer_size=len(self.data))
        unpacker.feed(self.data[offset:])
        return _Packed(self.base, self.times[:index], self.lengths[:index], self.data[:offset]), [
            StoredStep(dumped) for dumped in unpacker]

    def without_first(self, count: int) -> "_Packed":
        """The steps after the first `count`, starting from the state the last of those left."""
        offset = sum(self.lengths[:count])
        return _Packed(_base_dump(self._ending_at(count - 1, offset)), self.times[count:], self.lengths[count:],
                       self.data[offset:])


_NOTHING_PACKED = _Packed(None, (), (), b"")


class StoredLog(StateLog):
    """A `StateLog` loaded from its dump, whose first steps stay packed until an item reaches them.

    While steps are packed, `base` is the last of them, so the decoded steps
    start from it as they would from what a punctuation left. A stored step
    keeps only a checksum of its outputs and makes them again when a re-run
    needs them: if `update` then makes others, it is not deterministic, and
    the log raises the UserFunctionError naming its `operator`.
    """

    __slots__ = ("packed", "operator")

    def __init__(self, operator: str):
        super().__init__()
        self.packed = _NOTHING_PACKED
        self.operator = operator

    @classmethod
    def load(cls, dumped, operator: str) -> "StoredLog":
        """The log `dump_log` dumped, of a key of stateful operator `operator`."""
        base, times, lengths, data, pending, dirty = dumped
        log = cls(operator)
        log.pending = early_tombstones.load(pending)
        if not times:
            log.base = _base_step(base)
            return log
        log.packed = _Packed(base, times, lengths, data)
        log.base = log.packed.last()
        if dirty is not None:  # a re-run left waiting from step `dirty` on needs that step and the later ones
            log._unpack(dirty)
            log.dirty = 0
        return log

    @property
    def latest(self):
        latest = super().latest
        if not self.packed.times:
            return latest
        return self.packed.times[-1] if latest is None or latest < self.packed.times[-1] else latest

    @property
    def forgets_from(self):
        times = self.packed.times
        return times[0] if times else super().forgets_from

    def add(self, item, combine) -> list:
        times = self.packed.times
        if times and times[-1] >= item.meta[0]:
            self._unpack(bisect_left(times, item.meta[0]))
        try:
            return super().add(item, combine)
        except _OtherOutputs as exc:
            raise self._nondeterministic(exc.item) from None

    def flush(self, combine) -> list:
        try:
            return super().flush(combine)
        except _OtherOutputs as exc:
            raise self._nondeterministic(exc.item) from None

    def _nondeterministic(self, item) -> UserFunctionError:
        return UserFunctionError(
            f"update function of stateful operator {self.operator!r} is not deterministic: run again from the "
            f"same state on {item.meta.describe()}, it made other outputs than the first time"
        )

    def _unpack(self, index: int):
        """Decode the packed steps from `index` on, ahead of the decoded ones."""
        self.packed, steps = self.packed.split(index)
        self.steps[:0] = steps
        if self.dirty is not None:
            self.dirty += len(steps)
        self.base = self.packed.last() if index else _base_step(self.packed.base)
        if not index:
            self.packed = _NOTHING_PACKED

    def collect(self, time) -> int:
        times = self.packed.times
        if times and times[0] <= time:
            forgotten = bisect_right(times, time)
            if forgotten < len(times):
                self.packed = self.packed.without_first(forgotten)
            else:
                self.packed = _NOTHING_PACKED
                if self.base.state_data == NO_STATE:
                    self.base = None  # as `StateLog.collect` leaves a key back at a new key's state
        return super().collect(time)


def dump_log(log: StateLog) -> list:
    """`log` as msgpack-able lists, for engines that keep it in a state store: `StoredLog.load` takes them back.

    Steps still packed stay as they are; the others are packed one by one.
    """
    packed = log.packed if isinstance(log, StoredLog) else _NOTHING_PACKED
    if packed.times:
        base, times, lengths, data = packed.base, list(packed.times), list(packed.lengths), [packed.data]
    else:
        base, times, lengths, data = _base_dump(log.base), [], [], []
    for step in log.steps:
        encoded = msgpack.packb(step.dump())
        times.append(step.meta[0])
        lengths.append(len(encoded))
        data.append(encoded)
    pending = early_tombstones.dump(log.pending)
    dirty = None if log.dirty is None else len(packed.times) + log.dirty
    return [base, times, lengths, b"".join(data), pending, dirty]
