"""Buffer-and-sort: the baseline's reorder buffer in front of an order-sensitive operator."""
from operator import itemgetter

from barrier.impatience import ImpatienceSorter
from flamespark.core.batch import Batch
from operators.base import BoundaryOperator

_identity = itemgetter(0, 2)  # a held row's meta and encoded payload


class BufferSort(BoundaryOperator):
    """Holds rows until a punctuation covers them, then releases them in meta order.

    Its state is the sorter holding the rows, each as `(meta, payload, data, weight, arrival, cause)`.

    >>> from flamespark.core.items import Meta
    >>> buffer = BufferSort("buffer")
    >>> state = buffer.new_state()
    >>> buffer.take(Batch([Meta(9, "s", 0, (0,)), Meta(4, "s", 0, (1,))], ["b", "a"], [b"", b""], [1, 1], [0.0, 0.0]), state)
    >>> buffer.punctuate(5, state).payloads, buffer.punctuate(10, state).payloads
    (['a'], ['b'])
    """

    kind = "buffer"

    def new_state(self) -> ImpatienceSorter:
        return ImpatienceSorter()

    def take(self, batch, state):
        push = state.push
        for row in zip(batch.metas, batch.payloads, batch.datas, batch.weights, batch.arrivals, batch.row_causes()):
            push(row[0][0], row)
        return None

    def punctuate(self, time, state):
        released = state.flush(time)
        if not released:
            return None
        released.sort(key=_identity)
        return rows_batch(released)


def rows_batch(rows: list) -> Batch:
    """The batch of `(meta, payload, data, weight, arrival, cause)` rows; it carries causes if a row has one."""
    metas, payloads, datas, weights, arrivals, causes = map(list, zip(*rows))
    return Batch(metas, payloads, datas, weights, arrivals, causes if any(causes) else None)
