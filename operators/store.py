"""Where a keyed operator's state lives: its buckets by key.

A bucket is what the operator keeps for one key: a `Bucket` of items for a
grouping, a `StateLog` of steps for a stateful operator. Engines hand a keyed
operator its `KeyedState` on every call. The local engine keeps a
`DictState` for the whole run; an engine with a state store implements
`KeyedState` over it, for as long as one batch of one shard lasts.
"""
import math
from heapq import heappop, heappush


class KeyedState:
    """One keyed operator's state, as its engine keeps it.

    Buckets are keyed by the msgpack encoding of their key. A bucket the
    operator got from `get` may be changed in place; the operator hands a new
    bucket, and every changed one whose key is not in `watched`, back with
    `put`, so a store that writes to a state store writes only what changed.
    A bucket put back may hold nothing (`bucket.empty`): the store drops it,
    at once or when it next looks at the key, and until then may hand it out
    again, as good as a new one.
    """

    def __init__(self):
        # The keys whose buckets the store holds as they are and looks at again by itself, so that a change in
        # place needs no `put` (none here).
        self.watched = ()
        # Buckets touched since the store last reset the count: operators add the items they took, the local
        # store its puts.
        self.touched = 0

    def get(self, key: bytes):
        """The key's bucket, or None if there is none."""
        raise NotImplementedError

    def put(self, key: bytes, bucket):
        raise NotImplementedError

    def collectable(self, time) -> list:
        """Called at every punctuation `time`: the keys whose buckets to collect now.

        A store names every key whose bucket may hold something at or below
        `time` often enough that what no punctuation can change does not pile
        up, and seldom enough that the cost per item stays constant. A key
        named may have no bucket any more."""
        raise NotImplementedError


class DictState(KeyedState):
    """Every bucket in a dict, for the whole run.

    Each key whose bucket holds something later than the latest punctuation
    is queued, once, under a time a punctuation reaching makes the key collectable:
    halfway from the latest punctuation to the latest event time the bucket
    holds, or the first time at which it can forget something if that is
    later. A key that gets an item at every event time (a frequent word)
    then holds at most half a reorder latency's worth more than it must (at
    the latest event time, it would hold up to twice as much), and one that
    holds a single item is visited once. Keys are handed out
    once at least `sweep_spacing` buckets were touched (items taken, buckets
    put) since the last time, so a collection is worth its cost, and only
    keys with something to forget are visited. A queued key is `watched`:
    its bucket is looked at when its time comes, however it changed.
    """

    def __init__(self, sweep_spacing: int = 1024):
        super().__init__()
        self._buckets = {}
        # `get` is the dict's own method, not a wrapper around it: a bucket is read per item, and a wrapper adds a
        # Python frame to each read.
        self.get = self._buckets.get
        self._queued = {}  # event time -> the keys collectable once a punctuation reaches it
        self._times = []  # heap of the times in `_queued`
        self._is_queued = self.watched = set()
        self._horizon = -math.inf  # the latest punctuation: a bucket holding nothing later is settled
        self._sweep_spacing = sweep_spacing

    def put(self, key, bucket):
        self.touched += 1
        if key in self._is_queued:  # a key in use: an empty bucket is dropped once the key is collectable
            self._buckets[key] = bucket
            return
        latest = bucket.latest
        if latest is None and bucket.empty:
            self._buckets.pop(key, None)
            return
        self._buckets[key] = bucket
        horizon = self._horizon
        if latest is not None and latest > horizon:
            self._is_queued.add(key)
            collect_at = latest
            if horizon > -math.inf:  # halfway there, or at the first time it can forget something if later
                first = bucket.forgets_from
                if first is not None:
                    collect_at = horizon + (latest - horizon) // 2
                    if first > collect_at:
                        collect_at = first
            keys = self._queued.get(collect_at)
            if keys is None:
                self._queued[collect_at] = [key]
                heappush(self._times, collect_at)
            else:
                keys.append(key)

    def collectable(self, time):
        self._horizon = time
        times = self._times
        if self.touched < self._sweep_spacing or not times or times[0] > time:
            return []
        self.touched = 0
        keys = []
        while times and times[0] <= time:
            keys += self._queued.pop(heappop(times))
        self._is_queued.difference_update(keys)
        return keys
