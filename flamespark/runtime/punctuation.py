"""Punctuations from source progress and a reorder latency."""
import math


class PunctuationClock:
    """Tracks each source's progress and derives the global punctuation.

    A source that has seen events up to `max_ts` promises nothing earlier than
    `max_ts - reorder_latency` will come: events may be up to `reorder_latency`
    ms behind the newest one, so the punctuation is `max_ts - reorder_latency - 1`
    (integer milliseconds: an event exactly `reorder_latency` behind is on time).
    The global punctuation is the minimum over sources; a source that ended
    counts as `+inf`, one that has said nothing yet holds progress back.
    """

    def __init__(self, sources, reorder_latency: int = 0):
        if not isinstance(reorder_latency, int) or reorder_latency < 0:
            raise ValueError(f"reorder_latency must be a non-negative integer (ms), got {reorder_latency!r}")
        self.reorder_latency = reorder_latency
        self._max_ts = {source: -math.inf for source in sources}
        self._ended = set()

    def observe(self, source: str, ts: int):
        if ts > self._max_ts[source]:
            self._max_ts[source] = ts

    def end(self, source: str):
        self._ended.add(source)

    def source_time(self, source: str):
        if source in self._ended:
            return math.inf
        return self._max_ts[source] - self.reorder_latency - 1

    def time(self):
        """The punctuation every source currently supports."""
        return min((self.source_time(source) for source in self._max_ts), default=math.inf)
