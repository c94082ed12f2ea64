"""The stateful loop: grouping with window 2, a combine map, and a feedback edge (paper §V-C)."""
from flamespark.core.codec import unpack
from flamespark.core.errors import UserFunctionError
from flamespark.core.items import Item, encode
from operators.base import cancel_pairs
from operators.keyed import KeyedOperator


class StatefulLoop(KeyedOperator):
    """Runs `update(state, item) -> (new_state, outputs)` per key, in meta order.

    Per key, a window-2 grouping holds input items and the state items fed
    back by the combine map, each state right after the item that made it. The
    combine map acts only on windows `(item,)` (first item of a key: state is
    None) and `(state, item)`; every other window is transient and ignored. A
    tombstone for a window replays `update` on it to cancel its state and
    outputs, so `update` must be deterministic. The feedback runs on an
    explicit stack: a late item retracts the whole tail of its key.
    """

    kind = "stateful"

    def __init__(self, name, key, update):
        super().__init__(name, key, window=2)
        if not callable(update):
            raise TypeError(f"update of operator {name!r} must be callable")
        self.update = update

    def apply(self, bucket, item):
        outputs = []
        if not item.tombstone and bucket.takes_at_end(item):
            # In order (the common case): the window is (last state, item) or (item,), and the new
            # state goes straight to the end of the bucket; the same as the loop below, without it.
            last = bucket.last()
            if last is None or last.is_state:
                bucket.append(item)
                window = (item,) if last is None else (last, item)
                bucket.append(self._combine(window, False, outputs))
                return outputs
        feedback = [item]
        while feedback:
            for tombstone, window in bucket.add(feedback.pop()):
                state = self._combine(window, tombstone, outputs)
                if state is not None:
                    feedback.append(state)
        return cancel_pairs(outputs)

    def _combine(self, window, tombstone, outputs):
        """The combine map: run `update` on `(item,)` or `(state, item)`; returns the new state item."""
        item = window[-1]
        if item.is_state:
            return None
        if len(window) == 1:
            state = None
        elif window[0].is_state:
            state = unpack(window[0].data)
        else:
            return None
        new_state, results = self._call_update(item, state)
        arrival = max(element.arrival for element in window)
        meta = item.meta
        for index, payload in enumerate(results):
            out_meta = meta.child(index)
            outputs.append(Item(out_meta, payload, encode(payload, self.name, out_meta), tombstone, arrival))
        state_meta = meta.child(0)
        return Item(state_meta, new_state, encode(new_state, self.name, state_meta), tombstone, arrival, True)

    def _call_update(self, item, state):
        result = self.call("update", self.update, item, state, unpack(item.data))
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise UserFunctionError(
                f"update function of stateful operator {self.name!r} must return (new_state, outputs), "
                f"got {type(result).__name__} (on {item.meta.describe()})"
            )
        new_state, results = result
        if results is None:
            return new_state, ()
        if isinstance(results, (dict, str, bytes)) or not hasattr(results, "__iter__"):
            raise UserFunctionError(
                f"update function of stateful operator {self.name!r} must return outputs as an iterable "
                f"of payloads (e.g. a list), got {type(results).__name__} (on {item.meta.describe()})"
            )
        return new_state, list(results)
