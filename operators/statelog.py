"""One key's history in a stateful operator: the items applied, in meta order, each with the state after it.

The paper builds a stateful operator from a window-2 grouping, a combine map
and a feedback edge. `StateLog` keeps the same history in the form the work
needs: per applied item a `Step` with the state it started from, the state
after it and the outputs it made. States are kept encoded, and decoded as
well where a step was made: an item appended in order drops the decoded
state of the step before it, which only a re-run from there would read
(and decodes again), and so does any run from a step whose state is a list
or dict, which `update` may have changed in place (natural Python does).
An in-order item is one `update` call and an append;
a late item or a tombstone re-runs `update` from its place on, retracting
exactly the outputs that change (an output equal to the old one at its
place stays), and stops at the first step whose incoming state comes out as
it was.

A tombstone's re-run waits (the log is `dirty`) until the log's next change
or its `flush`: a replacement of the removed item, which a re-run upstream
sends right after the tombstone, then re-runs the later steps once, not
twice. The keyed operator flushes a dirty log by the end of the batch it
takes, before any punctuation. Engines that keep logs in a state store keep
them as `stored_log` packs them.
"""
import zlib
from bisect import bisect_left
from operator import attrgetter

from flamespark.core.codec import pack
from flamespark.core.errors import InternalError
from flamespark.core.items import Item
from operators import early_tombstones

NO_STATE = pack(None)


class _Undecoded:
    """A step's `state` where it keeps its state only encoded (`state_data`). A value, not an empty slot: reading
    an empty slot raises, which cost more than the decoding it spares on the paths that meet it most."""

    __slots__ = ()

    def __repr__(self):
        return "UNDECODED"


UNDECODED = _Undecoded()
# Decoded states that no `update` can change in place, which a step keeps after handing them to one.
UNCHANGEABLE = frozenset({int, float, str, bytes, bool, type(None)})


class Step:
    """An applied item (present `count` times) and its meta, its incoming and resulting state, and its outputs."""

    __slots__ = ("item", "meta", "count", "base", "state", "state_data", "arrival", "outputs")

    def __init__(self, item, meta, base: bytes, state, state_data: bytes, arrival: float, outputs: tuple):
        self.item = item
        self.meta = meta
        self.count = 1
        self.base = base
        self.state = state
        self.state_data = state_data
        self.arrival = arrival
        self.outputs = outputs

    @property
    def data(self) -> bytes:
        """Its item's data, part of its identity."""
        return self.item.data

    def dump(self) -> list:
        """The step as msgpack-able lists; `stored_log.StoredStep` takes them back. Its outputs are left out, as
        `update` makes them again from the incoming state when they are needed; a digest of them checks that it
        does."""
        item = self.item
        return [item.meta.dump(), item.data, item.arrival, self.count, self.base, self.state_data, self.arrival,
                outputs_digest(self.outputs)]

    def made(self, combine) -> list:
        """Its outputs (`combine` is the operator's combine map, which a stored step needs to make them again)."""
        return self.outputs


def outputs_digest(outputs) -> int:
    """A checksum of the outputs' encodings, which a stored step keeps in their place."""
    return zlib.crc32(b"".join(output.data for output in outputs))  # msgpack encodings delimit themselves


_meta = attrgetter("meta")


class StateLog:
    """A key's steps in meta order, and the tombstones that came before their items.

    `add(item, combine)` applies an item or a tombstone and returns what that
    changes downstream: tombstones for outputs that no longer hold, then new
    outputs. `combine(item, previous_step)` is the operator's combine map.
    A step's identity is its meta and its item's data (`Step.data`, which a
    stored step gives without decoding its item), so no tuple is made per
    step.
    """

    __slots__ = ("base", "steps", "pending", "dirty")

    def __init__(self):
        # What is left of the last step a punctuation forgot (the state the next starts from), unless that is None.
        self.base = None
        self.steps = []
        self.pending = None  # identity -> count of tombstones whose items have not come, once there is one
        self.dirty = None  # the first step not re-run since a removal before it, if any

    @property
    def empty(self) -> bool:
        return not self.steps and not self.pending and self.base is None

    @property
    def latest(self):
        """The latest event time among its steps and waiting tombstones, or None: once a punctuation reaches
        it, `collect` leaves the log as it is until something new comes."""
        if not self.pending:
            return self.steps[-1].meta.ts if self.steps else None
        times = [self.steps[-1].meta.ts] if self.steps else []
        times += early_tombstones.times(self.pending)
        return max(times)

    @property
    def forgets_from(self):
        """The earliest punctuation at which `collect` would forget a step, or None if there is no step."""
        return self.steps[0].meta.ts if self.steps else None

    def add(self, item, combine) -> list:
        """Returns what the change makes: a list, or the tuple of a step's outputs, which callers must not change."""
        if item.tombstone:
            return self._remove(item.meta, item.data, combine)
        meta, data = item.meta, item.data
        if self.pending and early_tombstones.cancel(self.pending, (meta, data)):
            return []
        steps = self.steps
        if self.dirty is None and (not steps or steps[-1].meta < meta):
            if not steps:
                step = combine(item, self.base)
                _forget_changeable(self.base)
            else:
                last = steps[-1]
                step = combine(item, last)
                last.state = UNDECODED  # the next step starts from `step`: a re-run from `last` decodes `state_data`
            steps.append(step)
            return step.outputs
        position = self._find(meta, data)
        if self._holds(position, meta, data):
            steps[position].count += 1
            return []
        out = self.flush(combine) if self.dirty is not None and position > self.dirty else []
        previous = steps[position - 1] if position else self.base
        step = combine(item, previous)
        _forget_changeable(previous)
        steps.insert(position, step)
        if self.dirty is not None:
            self.dirty += 1
        out.extend(step.outputs)
        return self._rerun(position + 1, combine, out)

    def _find(self, meta, data) -> int:
        """The first position whose identity is not below `(meta, data)`."""
        steps = self.steps
        position = bisect_left(steps, meta, key=_meta)
        while position < len(steps) and steps[position].meta == meta and steps[position].data < data:
            position += 1
        return position

    def _holds(self, position, meta, data) -> bool:
        steps = self.steps
        return position < len(steps) and steps[position].meta == meta and steps[position].data == data

    def _remove(self, meta, data, combine) -> list:
        position = self._find(meta, data)
        if not self._holds(position, meta, data):
            self.pending = early_tombstones.wait(self.pending, (meta, data))
            return []
        if self.steps[position].count > 1:
            self.steps[position].count -= 1
            return []
        out = self.flush(combine)  # steps keep their places; the one at `position` may be a re-run of it
        step = self.steps[position]
        del self.steps[position]
        if position < len(self.steps):
            self.dirty = position
        out.extend(tombstone(output) for output in step.made(combine))
        return out

    def flush(self, combine) -> list:
        """Do the re-run a removal left waiting, if any; returns what it changes downstream."""
        return [] if self.dirty is None else self._rerun(self.dirty, combine, [])

    def _rerun(self, position, combine, out) -> list:
        """Re-run the steps from `position` on while the state they start from has changed (and at least up to
        the `dirty` step); the log is clean after."""
        steps, dirty = self.steps, self.dirty
        self.dirty = None
        for index in range(position, len(steps)):
            old = steps[index]
            previous = steps[index - 1] if index else self.base
            if (previous.state_data if previous else NO_STATE) == old.base:
                if dirty is not None and index < dirty:
                    continue
                break
            new = combine(old.item, previous)
            _forget_changeable(previous)
            new.count = old.count
            new.outputs = _keep_unchanged_outputs(old.made(combine), new.outputs, out)
            steps[index] = new
        return out

    def collect(self, time) -> int:
        """Forget the steps with `ts <= time`, keeping the state after the last of them unless it is None (as a
        new key's); returns orphan tombstones seen. No item or tombstone can come at or before `time` any more."""
        if self.dirty is not None:
            raise InternalError("internal error: a key's re-run was still waiting at a punctuation (flush first)")
        steps = self.steps
        if not steps or steps[0].meta[0] > time:
            cut = 0
        else:
            cut = bisect_left(steps, (time + 1,), key=_meta)  # a Meta is a tuple: those of `ts <= time` sort below
        if cut:
            last = steps[cut - 1]
            # A key back at a new key's state (a collector that emitted) keeps nothing, so its store can drop it.
            self.base = None if last.state_data == NO_STATE else _base_after(last)
            del steps[:cut]
        return early_tombstones.orphans(self.pending, time)


def _forget_changeable(step):
    """Drop `step`'s decoded state (if any) after a run from it, unless `update` could not have changed it in
    place: a later run from `step` decodes `state_data` afresh."""
    if step is not None and type(step.state) not in UNCHANGEABLE:
        step.state = UNDECODED


def _base_after(step) -> Step:
    """What a log keeps of `step`, the last step a punctuation forgot: the state it left, decoded only if `step`
    had it decoded. A plain step is stripped of the rest in place, which spares a copy at every collection; a
    stored step is copied (it decodes its item on reading, and keeps its dump)."""
    if type(step) is Step:
        step.item = step.meta = step.base = None
        step.outputs = ()
        return step
    return Step(None, None, None, step.state, step.state_data, step.arrival, ())


def _keep_unchanged_outputs(old, new, out: list) -> tuple:
    """A re-run's outputs `new`, with the old item kept where an output equals the old one at its place (same
    meta, same data); adds tombstones for the old outputs that changed, then the new outputs that replace them,
    to `out`."""
    kept, changed = [], []
    for index, output in enumerate(new):
        if index < len(old):
            previous = old[index]
            if previous.data == output.data:
                kept.append(previous)
                continue
            out.append(tombstone(previous))
        kept.append(output)
        changed.append(output)
    if len(old) > len(new):
        out.extend(tombstone(previous) for previous in old[len(new):])
    out.extend(changed)
    return tuple(kept)


def tombstone(item) -> Item:
    """The tombstone that cancels `item`."""
    return Item(item.meta, item.payload, item.data, True, item.arrival)
