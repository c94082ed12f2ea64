"""Where a keyed operator's state lives: its buckets by key.

A bucket is what the operator keeps for one key: a `Bucket` of items for a
grouping, a `StateLog` of steps for a stateful operator. Engines hand a keyed
operator its `KeyedState` on every call. The local engine keeps a
`DictState` for the whole run; an engine with a state store implements
`KeyedState` over it, for as long as one batch of one shard lasts.
"""


class KeyedState:
    """One keyed operator's state, as its engine keeps it.

    Buckets are keyed by the msgpack encoding of their key. A bucket the
    operator got from `get` may be changed in place, but the operator hands
    every changed bucket back with `put`, or `delete`s it once it holds
    nothing, so a store that writes to a state store writes only what changed.
    """

    def get(self, key: bytes):
        """The key's bucket, or None if there is none."""
        raise NotImplementedError

    def put(self, key: bytes, bucket):
        raise NotImplementedError

    def delete(self, key: bytes):
        raise NotImplementedError

    def held(self) -> list:
        """The keys whose buckets are in memory: what a sweep collects."""
        raise NotImplementedError

    def sweep_due(self) -> bool:
        """Called once per punctuation: whether to collect every held bucket now.

        A store that holds buckets for long sweeps them often enough to keep
        what no punctuation can change from piling up, and seldom enough that
        the cost per item stays constant."""
        raise NotImplementedError


class DictState(KeyedState):
    """Every bucket in a dict, for the whole run.

    A sweep visits every bucket, so it is due once as many buckets have been
    put as there are, and at least `sweep_spacing`: the cost per item stays
    constant, and a key seen once is collected soon after the punctuation
    that can forget it.
    """

    def __init__(self, sweep_spacing: int = 1024):
        self._buckets = {}
        self._since_sweep = 0
        self._sweep_spacing = sweep_spacing

    def get(self, key):
        return self._buckets.get(key)

    def put(self, key, bucket):
        self._buckets[key] = bucket
        self._since_sweep += 1

    def delete(self, key):
        self._buckets.pop(key, None)

    def held(self):
        return list(self._buckets)

    def sweep_due(self):
        if self._since_sweep < max(len(self._buckets), self._sweep_spacing):
            return False
        self._since_sweep = -len(self._buckets)  # the sweep puts back every bucket: those puts do not count
        return True
