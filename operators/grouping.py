"""Windowed grouping (paper §V-B): per key, the tuple of the last `window` payloads."""
from flamespark.core.codec import pack_encoded_tuple
from flamespark.core.items import Item
from operators.bucket import Bucket
from operators.keyed import KeyedOperator

__all__ = ["Bucket", "WindowedGrouping"]


class WindowedGrouping(KeyedOperator):
    """Emits, for each insert, the tuple of the last `window` payloads of its key.

    An out-of-order insert or an incoming tombstone also emits tombstones for
    the tuples it invalidates, then the new tuples (Algorithm 2). A tuple takes
    the meta of its last item.
    """

    kind = "group_by"

    def __init__(self, name, key, window):
        super().__init__(name, key)
        self.window = window

    def new_bucket(self) -> Bucket:
        return Bucket(self.window)

    def load_bucket(self, dumped) -> Bucket:
        return Bucket.load(self.window, dumped)

    def dump_bucket(self, bucket: Bucket) -> list:
        return bucket.dump()

    @staticmethod
    def combine(window, tombstone) -> Item:
        """What a key's bucket makes of a window it adds or retracts: the item whose payload is the tuple of the
        window's payloads, with the meta of its last item."""
        return Item(
            window[-1].meta,
            tuple(element.payload for element in window),
            pack_encoded_tuple([element.data for element in window]),
            tombstone,
            max(element.arrival for element in window),
        )
