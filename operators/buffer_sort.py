"""Buffer-and-sort: the baseline's reorder buffer in front of an order-sensitive operator."""
from barrier.impatience import ImpatienceSorter
from operators.base import BoundaryOperator


class BufferSort(BoundaryOperator):
    """Holds items until a punctuation covers them, then releases them in meta order.

    Its state is the sorter holding the items.
    """

    kind = "buffer"

    def new_state(self) -> ImpatienceSorter:
        return ImpatienceSorter()

    def process(self, item, state):
        state.push(item.meta.ts, item)
        return []

    def punctuate(self, time, state):
        released = state.flush(time)
        released.sort(key=_identity)
        return released


def _identity(item):
    return item.identity
