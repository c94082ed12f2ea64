"""Stateless per-item operators: map, flat_map, filter, branch, union.

Each one runs inline: `inline(send)` gives the function that takes an item
and hands its outputs to `send`, so a chain of them costs one call per
operator and item. A tombstone goes through the same function as the item
it cancels, so it yields tombstones for exactly the derivatives that item
produced.
"""
from flamespark.core.codec import pack
from flamespark.core.errors import FlameSparkError
from flamespark.core.items import Item, Meta, encode, new_meta
from operators.base import Operator


class MapOperator(Operator):
    """One output per item; the output keeps the item's meta."""

    kind = "map"

    def __init__(self, name, fn):
        super().__init__(name)
        self.fn = fn

    def inline(self, send):
        fn, name = self.guarded("map", self.fn), self.name

        def run(item):
            payload = fn(item)
            meta = item.meta
            send(Item(meta, payload, encode(payload, name, meta), item.tombstone, item.arrival))

        return run


class FlatMapOperator(Operator):
    """Any number of outputs per item, ordered by emission."""

    kind = "flat_map"

    def __init__(self, name, fn):
        super().__init__(name)
        self.fn = fn

    def inline(self, send):
        user_fn, name = self.fn, self.name
        fn = self.guarded("flat_map", lambda payload: list(user_fn(payload)))

        def run(item):
            payloads = fn(item)
            parent, tombstone, arrival = item.meta, item.tombstone, item.arrival
            for index, payload in enumerate(payloads):
                meta = new_meta(Meta, parent + (index,))
                try:  # `encode`, inlined: a document can make thousands of parts
                    data = pack(payload)
                except (TypeError, ValueError, OverflowError):
                    data = encode(payload, name, meta)  # raises the PayloadError naming the event
                send(Item(meta, payload, data, tombstone, arrival))

        return run


class FilterOperator(Operator):
    """Keeps the items for which the predicate is true."""

    kind = "filter"

    def __init__(self, name, predicate):
        super().__init__(name)
        self.predicate = predicate

    def inline(self, send):
        predicate = self.guarded("filter", self.predicate)

        def run(item):
            if predicate(item):
                send(item)

        return run


class BranchOperator(Operator):
    """Hands each item to the first of its two targets (its ports) if the predicate is true, else to the second.

    `inline(when_true, when_false)` takes one function per target, in the
    order of the plan's targets, where other stateless operators take one.
    """

    kind = "branch"
    ports = 2

    def __init__(self, name, predicate):
        super().__init__(name)
        self.predicate = predicate

    def inline(self, when_true, when_false):
        predicate, failure = self.predicate, self.failure

        def run(item):
            try:  # `guarded`, inlined: a branch often splits every item of a pipeline
                chosen = predicate(item.payload)
            except FlameSparkError:
                raise
            except Exception as exc:
                raise failure("branch", exc, item) from exc
            if chosen:
                when_true(item)
            else:
                when_false(item)

        return run


class PortOperator(Operator):
    """One of a branch's two streams: hands its items on as they are (the branch routed them)."""

    kind = "port"

    def inline(self, send):
        return send


class UnionInputOperator(Operator):
    """One input of a union: extends the path by the input's index so the inputs' items never collide."""

    kind = "union"

    def __init__(self, name, index: int):
        super().__init__(name)
        self.index = index

    def inline(self, send):
        index = self.index

        def run(item):
            send(Item(item.meta.child(index), item.payload, item.data, item.tombstone, item.arrival))

        return run
