"""The stateful operator: `update(state, payload) -> (new_state, outputs)` per key, in meta order (paper §V-C)."""
from flamespark.core.codec import pack, unpack
from flamespark.core.errors import FlameSparkError, UserFunctionError
from flamespark.core.items import Item, Meta, encode, new_meta
from operators.keyed import KeyedOperator
from operators.statelog import NO_STATE, UNCHANGEABLE, UNDECODED, StateLog, Step
from operators.stored_log import StoredLog, dump_log


class StatefulLoop(KeyedOperator):
    """Runs `update` per key in meta order; a late item re-runs it from its place in the key's history on.

    Semantically this is the paper's construction: a window-2 grouping of
    items and the states fed back to it, and a combine map that runs `update`
    on `(item,)` or `(state, item)` windows (the literal form is kept as the
    test oracle, `tests/oracles/literal_stateful.py`). Per key it keeps a `StateLog`,
    so an item in order costs one `update` call, and a late item or a
    tombstone re-runs `update` only while the state it starts from changed.
    `update` must be deterministic and must not mutate its payload; it may
    change its state in place (each call gets one no earlier output shares).
    """

    kind = "stateful"

    def __init__(self, name, key, update, shard=None):
        super().__init__(name, key, shard)
        if not callable(update):
            raise TypeError(f"update of operator {name!r} must be callable")
        self.update = update

    def new_bucket(self) -> StateLog:
        return StateLog()

    def load_bucket(self, dumped) -> StoredLog:
        return StoredLog.load(dumped, self.name)

    def dump_bucket(self, log: StateLog) -> list:
        return dump_log(log)

    def combine(self, item, previous) -> Step:
        """The combine map, with which a key's log applies items: `update` on `item` after step `previous` (None
        for a key's first item)."""
        if previous is None:
            state, base, arrival = None, NO_STATE, item.arrival
        else:
            base = previous.state_data
            state = previous.state
            if state is UNDECODED:
                state = unpack(base)
            arrival = previous.arrival if previous.arrival > item.arrival else item.arrival
        try:
            result = self.update(state, item.payload)
        except FlameSparkError:
            raise
        except Exception as exc:
            raise self.failure("update", exc, item) from exc
        if type(result) is tuple and len(result) == 2 and type(result[1]) is list:
            new_state, results = result  # the common, well-formed case, checked without a call
        else:
            new_state, results = self._checked(item, result)
        meta = item.meta
        try:
            if len(results) == 1:  # the common case, without a loop
                outputs = (Item(new_meta(Meta, meta + (0,)), results[0], pack(results[0]), False, arrival),)
            else:
                outputs = tuple(Item(new_meta(Meta, meta + (index,)), payload, pack(payload), False, arrival)
                                for index, payload in enumerate(results))
            state_data = pack(new_state)
        except (TypeError, ValueError, OverflowError):
            for index, payload in enumerate(results):  # raises the PayloadError naming the event
                encode(payload, self.name, meta.child(index))
            encode(new_state, self.name, meta, "a state")
            raise
        # A tuple holds its items in one block, 32 bytes less than a list of two (the count per word's steps); the
        # steps that emit nothing (a collector's, until its last part) share the empty one.
        step = Step(item, meta, base, new_state, state_data, arrival, outputs)
        if results and type(new_state) not in UNCHANGEABLE:
            for payload in results:
                if payload is new_state:
                    # An output that is the state itself stays as it was made, though the next `update` may change
                    # the state it is given in place: that one gets the state decoded afresh.
                    step.state = UNDECODED
                    break
        return step

    def _checked(self, item, result):
        """`(new_state, outputs)` from what `update` returned, or a UserFunctionError saying what is wrong."""
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
