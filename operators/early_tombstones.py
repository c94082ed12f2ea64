"""Tombstones that reach a keyed bucket before their items, as retractions from upstream may: a count per
identity `(meta, data)`, until the item comes and the two cancel.

A bucket keeps None until it holds one, as most never do; each function takes
that None as empty.

>>> from flamespark.core.items import Meta
>>> identity = (Meta(5, "s", 0, (0,)), b"\\x01")
>>> early = wait(None, identity)
>>> orphans(early, 4), orphans(early, 5)
(0, 1)
>>> cancel(early, identity), cancel(early, identity)
(True, False)
>>> load(dump(wait(None, identity))) == {identity: 1}
True
"""
from flamespark.core.items import Meta, new_meta


def wait(early: dict | None, identity) -> dict:
    """`early` with one more tombstone of `identity`: the same dict, or a new one if it was None."""
    if early is None:
        early = {}
    early[identity] = early.get(identity, 0) + 1
    return early


def cancel(early: dict | None, identity) -> bool:
    """Whether a tombstone of `identity` was waiting; if so it is used up, and the item it cancels is not to be
    added."""
    count = early.get(identity) if early else None
    if not count:
        return False
    if count == 1:
        del early[identity]
    else:
        early[identity] = count - 1
    return True


def orphans(early: dict | None, time) -> int:
    """How many waiting tombstones are at or below punctuation `time`, whose items can no longer come."""
    return sum(count for (meta, _), count in early.items() if meta[0] <= time) if early else 0


def times(early: dict | None) -> list:
    """The event times of the waiting tombstones."""
    return [meta[0] for meta, _ in early] if early else []


def dump(early: dict | None) -> list:
    """The waiting tombstones as msgpack-able lists, which `load` takes back."""
    return [[meta.dump(), data, count] for (meta, data), count in (early or {}).items()]


def load(dumped: list) -> dict | None:
    return {(new_meta(Meta, meta), data): count for meta, data, count in dumped} or None
