"""Batches: what operators take and give, on every engine.

A batch is a change to a multiset of items, as Differential Dataflow's and
DBSP's weighted collections are: each row is an item with a weight, +1 to
add it, -1 for a tombstone, which cancels an item of equal identity (meta
and encoded payload). Its rows are kept in columns, one list per field, so
that an operator runs a user function over a batch's payloads in one tight
loop and hands the other columns on as they are.

A batch may carry each row's *cause*: a value, opaque to operators, that
names the input event the row came from, and that they hand on with the
rows they make of it; otherwise `causes` is None.

>>> batch = Batch([Meta(1, "s", 0, (0,)), Meta(2, "s", 0, (1,))], ["a", "b"], [b"\\xa1a", b"\\xa1b"], [1, -1], [0.0, 0.0])
>>> [(item.payload, item.tombstone) for item in batch.items()]
[('a', False), ('b', True)]
"""
from __future__ import annotations

from itertools import islice
from operator import attrgetter, itemgetter, lt

from flamespark.core.items import Item, Meta

_item_columns = attrgetter("meta", "payload", "data", "tombstone", "arrival")


class Batch:
    """Rows in columns: `metas`, `payloads`, `datas` (each payload's msgpack encoding), `weights` (+1 or -1),
    `arrivals` (the latest input arrival each row depends on, seconds on the engine's clock) and `causes`
    (None, or each row's cause). Operators make new batches and never change one they are given."""

    __slots__ = ("metas", "payloads", "datas", "weights", "arrivals", "causes")

    def __init__(self, metas: list, payloads: list, datas: list, weights: list, arrivals: list, causes=None):
        self.metas = metas
        self.payloads = payloads
        self.datas = datas
        self.weights = weights
        self.arrivals = arrivals
        self.causes = causes

    def __len__(self):
        return len(self.metas)

    def __repr__(self):
        rows = ", ".join(f"{'-' if weight < 0 else '+'}{meta[0]}:{payload!r}"
                         for meta, payload, weight in zip(self.metas, self.payloads, self.weights))
        return f"Batch([{rows}])"

    @classmethod
    def empty(cls, causes: bool = False) -> "Batch":
        """A batch with no rows; with `causes`, one that carries them."""
        return cls([], [], [], [], [], [] if causes else None)

    @classmethod
    def of_items(cls, items, causes: list | None = None) -> "Batch":
        """The batch of `items` (a tombstone has weight -1), with their `causes` if given."""
        if not items:
            return cls([], [], [], [], [], None if causes is None else [])
        metas, payloads, datas, tombstones, arrivals = zip(*map(_item_columns, items))
        return cls(list(metas), list(payloads), list(datas), [-1 if dead else 1 for dead in tombstones],
                   list(arrivals), causes)

    @classmethod
    def concat(cls, batches: list) -> "Batch":
        """The rows of `batches`, one after another; causes are kept only if every batch carries them."""
        if len(batches) == 1:
            return batches[0]
        causes = None if any(batch.causes is None for batch in batches) else []
        joined = cls([], [], [], [], [], causes)
        for batch in batches:
            joined.metas += batch.metas
            joined.payloads += batch.payloads
            joined.datas += batch.datas
            joined.weights += batch.weights
            joined.arrivals += batch.arrivals
            if causes is not None:
                causes += batch.causes
        return joined

    def item(self, row: int) -> Item:
        """Row `row` as an `Item`."""
        return Item(self.metas[row], self.payloads[row], self.datas[row], self.weights[row] < 0, self.arrivals[row])

    def items(self) -> list:
        """Every row as an `Item`, for operators that hold items."""
        return list(map(Item, self.metas, self.payloads, self.datas, [weight < 0 for weight in self.weights],
                        self.arrivals))

    def row_causes(self) -> list:
        """Each row's cause, or None for each if the batch carries none."""
        return [None] * len(self.metas) if self.causes is None else self.causes

    def selected(self, rows) -> "Batch":
        """A batch of the rows at the positions `rows` (a sequence), in that order."""
        columns = [self.metas, self.payloads, self.datas, self.weights, self.arrivals]
        if self.causes is not None:
            columns.append(self.causes)
        if len(rows) > 1:
            pick = itemgetter(*rows)  # one C call a column
            columns = [list(pick(column)) for column in columns]
        else:
            columns = [[column[row] for row in rows] for column in columns]
        return Batch(*columns)

    def in_meta_order(self, keys: list | None = None):
        """The batch with its rows in identity order (meta, then encoded payload): the order in which the keyed
        operators apply them, so that disorder within a batch replays nothing. With `keys` (a list beside the
        rows), `(batch, keys)`, both in that order."""
        metas = self.metas
        if all(map(lt, metas, islice(metas, 1, None))):
            return self if keys is None else (self, keys)
        order = [row for _meta, _data, row in sorted(zip(metas, self.datas, range(len(metas))))]
        return self.selected(order) if keys is None else (self.selected(order), [keys[row] for row in order])


__all__ = ["Batch", "Meta"]
