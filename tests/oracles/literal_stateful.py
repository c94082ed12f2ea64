"""The paper's stateful operator, literally: a window-2 grouping, a combine map and a feedback edge.

The product runs `operators.StatefulLoop`, which keeps a key's history as a
log of steps; this is the construction it must agree with (tests/unit/test_literal.py).
Per key a window-2 `Bucket` holds input items and the state items fed back
by the combine map, each state right after the item that made it. The
combine map acts only on windows `(item,)` and `(state, item)`; a tombstone
for a window replays `update` on it to cancel its state and outputs. The
feedback runs on an explicit stack.
"""
from collections import Counter

from flamespark.core.codec import unpack
from flamespark.core.items import Item, encode
from operators.bucket import Bucket
from operators.keyed import KeyedOperator


class StateItem(Item):
    """A state fed back to the grouping."""

    __slots__ = ()


class LiteralStatefulLoop(KeyedOperator):
    kind = "stateful"

    def __init__(self, name, key, update):
        super().__init__(name, key)
        self.update = update

    def new_bucket(self):
        return FeedbackBucket()

    def combine(self, window, tombstone, outputs):
        """The combine map on one window change: adds the outputs it makes (or retracts) to `outputs`; returns the
        state item to feed back, if any."""
        item = window[-1]
        if isinstance(item, StateItem):
            return None
        if len(window) == 1:
            state = None
        elif isinstance(window[0], StateItem):
            state = unpack(window[0].data)
        else:
            return None
        new_state, results = self.update(state, unpack(item.data))
        arrival = max(element.arrival for element in window)
        for index, payload in enumerate(results or ()):
            meta = item.meta.child(index)
            outputs.append(Item(meta, payload, encode(payload, self.name, meta), tombstone, arrival))
        meta = item.meta.child(0)
        return StateItem(meta, new_state, encode(new_state, self.name, meta), tombstone, arrival)


class FeedbackBucket(Bucket):
    """A window-2 bucket with the feedback edge: the state items the combine map makes are added to it again."""

    __slots__ = ()

    def __init__(self):
        super().__init__(2)

    def add(self, item, combine) -> list:
        outputs, feedback = [], [item]
        while feedback:
            for tombstone, window in self.changes(feedback.pop()):
                state = combine(window, tombstone, outputs)
                if state is not None:
                    feedback.append(state)
        return cancel_pairs(outputs)


def cancel_pairs(items: list) -> list:
    """`items` without the tombstone-and-item pairs of one identity: together they change nothing.

    A replay often retracts an output and makes it again unchanged; dropping
    both keeps them from travelling to, and being counted at, the barrier.
    """
    tombstones = Counter(item.identity for item in items if item.tombstone)
    if not tombstones:
        return items
    regular = Counter(item.identity for item in items if not item.tombstone)
    pairs = {identity: min(count, regular[identity]) for identity, count in tombstones.items() if regular[identity]}
    if not pairs:
        return items
    skip_tombstones, skip_items = Counter(pairs), Counter(pairs)
    kept = []
    for item in items:
        skip = skip_tombstones if item.tombstone else skip_items
        if skip[item.identity] > 0:
            skip[item.identity] -= 1
        else:
            kept.append(item)
    return kept
