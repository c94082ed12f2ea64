"""Stateless operators: map, flat_map, filter, branch, union, each a function of a batch.

Each calls its user function once per row, in one loop over the batch's
payloads, and hands the other columns on as they are where it can. A
tombstone goes through the same function as the item it cancels, so it
makes tombstones for exactly the derivatives that item made.

>>> from flamespark.core.batch import Batch
>>> from flamespark.core.items import Meta
>>> words = Batch([Meta(5, "docs", 0, (0,))], ["to be"], [b""], [1], [0.0])
>>> split = FlatMapOperator("split", str.split).apply(words)
>>> [(meta.path, payload) for meta, payload in zip(split.metas, split.payloads)]
[((0, 0), 'to'), ((0, 1), 'be')]
"""
from itertools import compress

from flamespark.core.batch import Batch
from flamespark.core.codec import pack
from flamespark.core.errors import FlameSparkError
from flamespark.core.items import Meta, encode, new_meta
from operators.base import Operator


def encoded(payloads: list, metas: list, name: str) -> list:
    """Each payload's msgpack encoding; a payload it cannot encode raises the PayloadError naming operator `name`
    and the row's event."""
    try:
        return list(map(pack, payloads))
    except (TypeError, ValueError, OverflowError):
        for payload, meta in zip(payloads, metas):
            encode(payload, name, meta)  # raises, naming the first that fails
        raise


class MapOperator(Operator):
    """One output per row; the output keeps the row's meta."""

    kind = "map"

    def __init__(self, name, fn):
        super().__init__(name)
        self.fn = fn

    def apply(self, batch) -> Batch:
        payloads = self.called("map", self.fn, batch)
        return Batch(batch.metas, payloads, encoded(payloads, batch.metas, self.name), batch.weights, batch.arrivals,
                     batch.causes)


class FlatMapOperator(Operator):
    """Any number of outputs per row, ordered by emission: the i-th output's meta is its row's with i appended."""

    kind = "flat_map"

    def __init__(self, name, fn):
        super().__init__(name)
        self.fn = fn

    def apply(self, batch) -> Batch:
        fn, name = self.fn, self.name
        causes = batch.causes
        out = Batch.empty(causes is not None)
        metas, payloads, datas, weights, arrivals = out.metas, out.payloads, out.datas, out.weights, out.arrivals
        row = 0
        try:
            for row, (parent, payload) in enumerate(zip(batch.metas, batch.payloads)):
                parts = list(fn(payload))
                weight, arrival = batch.weights[row], batch.arrivals[row]
                for index, part in enumerate(parts):
                    meta = new_meta(Meta, parent + (index,))
                    try:  # `encoded`, inlined: a document can make thousands of parts
                        datas.append(pack(part))
                    except (TypeError, ValueError, OverflowError):
                        encode(part, name, meta)  # raises the PayloadError naming the event
                    metas.append(meta)
                    payloads.append(part)
                    weights.append(weight)
                    arrivals.append(arrival)
                if causes is not None:
                    out.causes += [causes[row]] * len(parts)
        except FlameSparkError:
            raise
        except Exception as exc:
            raise self.failure("flat_map", exc, batch.item(row)) from exc
        return out


class FilterOperator(Operator):
    """Keeps the rows for which the predicate is true."""

    kind = "filter"

    def __init__(self, name, predicate):
        super().__init__(name)
        self.predicate = predicate

    def apply(self, batch) -> Batch:
        return _kept(batch, self.called("filter", self.predicate, batch))


class BranchOperator(Operator):
    """Splits a batch in two, one batch per port: the rows for which the predicate is true, and the others."""

    kind = "branch"
    ports = 2

    def __init__(self, name, predicate):
        super().__init__(name)
        self.predicate = predicate

    def apply(self, batch) -> tuple:
        chosen = self.called("branch", self.predicate, batch)
        return _kept(batch, chosen), _kept(batch, [not flag for flag in chosen])


class PortOperator(Operator):
    """One of a branch's two streams: hands its batches on as they are (the branch split them)."""

    kind = "port"

    def apply(self, batch) -> Batch:
        return batch


class UnionInputOperator(Operator):
    """One input of a union: extends each path by the input's index, so that the inputs' items never collide."""

    kind = "union"

    def __init__(self, name, index: int):
        super().__init__(name)
        self.index = index

    def apply(self, batch) -> Batch:
        tag = (self.index,)
        metas = [new_meta(Meta, meta + tag) for meta in batch.metas]
        return Batch(metas, batch.payloads, batch.datas, batch.weights, batch.arrivals, batch.causes)


def _kept(batch, flags: list) -> Batch:
    """The rows of `batch` whose flag is true."""
    if all(flags):
        return batch
    columns = [list(compress(column, flags))
               for column in (batch.metas, batch.payloads, batch.datas, batch.weights, batch.arrivals)]
    causes = None if batch.causes is None else list(compress(batch.causes, flags))
    return Batch(*columns, causes)
