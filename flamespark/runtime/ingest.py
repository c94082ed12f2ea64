"""Turning checked input events into items: encoding, meta, duplicate indices."""
from flamespark.core.items import Item, Meta, encode, event_tiebreak


class EventMinter:
    """Makes source items: meta from the event itself, plus a duplicate index.

    Identical events (same source, time and payload) are told apart by how
    many identical ones came before; which copy gets which index cannot
    change any output, since the copies are interchangeable.
    """

    def __init__(self):
        self._seen = {}
        self._pruned_at = 0

    def mint(self, source: str, ts: int, payload, arrival: float) -> Item:
        data = encode(payload, source, Meta(ts, source, 0, ()))
        tiebreak = event_tiebreak(data)
        identity = (ts, source, tiebreak)
        duplicate = self._seen.get(identity, 0)
        self._seen[identity] = duplicate + 1
        return Item(Meta(ts, source, tiebreak, (duplicate,)), payload, data, False, arrival)

    def dump(self) -> list:
        return [[ts, source, tiebreak, count] for (ts, source, tiebreak), count in self._seen.items()]

    def load(self, dumped):
        self._seen = {(ts, source, tiebreak): count for ts, source, tiebreak, count in dumped}
        self._pruned_at = len(self._seen)

    def forget(self, time):
        """Drop duplicate counts at or below punctuation `time` (no such event can come again)."""
        if len(self._seen) < 2 * self._pruned_at + 1024:
            return
        self._seen = {identity: n for identity, n in self._seen.items() if identity[0] > time}
        self._pruned_at = len(self._seen)
