"""The interval join: a left item `l` and a right item `r` of one key pair when `lower <= ts(r) - ts(l) <= upper`.

The plan tags each input's items with their side, as a union tags its
inputs: the last index of an item's meta path is 0 for the left, 1 for the
right (a tombstone is tagged alike, so it still matches its item). Per key,
a bucket holds both sides' items in meta order; an item or tombstone emits
or retracts at once the pairs it makes or unmakes, and for `how="left"` and
`"left_anti"` the result of a left item while it has no partner. Every
result's meta derives from the items that made it, never from the order in
which they came, so an in-order run makes the same:

- a pair `{"left": l, "right": r}` at `max(ts(l), ts(r))`: the meta of the
  later of the two, extended by the other's (its source as a hash);
- an unmatched left item (`{"left": l, "right": None}`, or `l` itself) at
  `ts(l) + max(upper, 0)`, when no right item can match it any more: `l`'s
  meta at that time.

A left item is forgotten once the punctuation reaches `ts(l) + upper`, a
right item once it reaches `ts(r) - lower`: no item to come can pair with
them.
"""
from bisect import bisect_left, bisect_right
from operator import attrgetter

from flamespark.core.codec import pack, unpack
from flamespark.core.items import Item, Meta, event_tiebreak, new_meta
from operators import early_tombstones
from operators.keyed import KeyedOperator
from operators.statelog import tombstone

LEFT, RIGHT = 0, 1
_PAIR_HEADER = b"\x82" + pack("left")  # a map of two entries, then "left"
_RIGHT = pack("right")
_NONE = pack(None)
_item_ts = attrgetter("meta.ts")  # `Meta.ts` reads index 0


class JoinSpec:
    """An interval join's right key, bounds and kind, as the DSL checked them."""

    HOWS = ("inner", "left", "left_anti")

    def __init__(self, right_key, lower: int, upper: int, how: str):
        self.right_key = right_key
        self.lower = lower
        self.upper = upper
        self.how = how

    def describe(self) -> str:
        return f"{self.how} within [{self.lower}, {self.upper}] ms"


class Side:
    """One side's items of one key in meta order (`keys` holds their identities); for the left side, how many
    partners each has (`partners`, in step)."""

    __slots__ = ("keys", "items", "partners")

    def __init__(self):
        self.keys = []
        self.items = []
        self.partners = []

    def insert(self, item, partners: int):
        identity = (item.meta, item.data)
        keys = self.keys
        position = len(keys) if not keys or keys[-1] <= identity else bisect_right(keys, identity)
        keys.insert(position, identity)
        self.items.insert(position, item)
        self.partners.insert(position, partners)

    def find(self, identity) -> int:
        position = bisect_left(self.keys, identity)
        return position if position < len(self.keys) and self.keys[position] == identity else -1

    def pop(self, position: int) -> int:
        """Remove the item at `position`; returns its count of partners."""
        del self.keys[position], self.items[position]
        return self.partners.pop(position)

    def between(self, low: int, high: int) -> range:
        """The positions of the items with `low <= ts <= high`."""
        return range(bisect_left(self.items, low, key=_item_ts), bisect_right(self.items, high, key=_item_ts))

    def forget(self, through: int, offset: int):
        """Forget the items with `ts + offset <= through`: those at the front, as items are in time order."""
        cut = bisect_right(self.items, through - offset, key=_item_ts)
        if cut:
            del self.keys[:cut], self.items[:cut], self.partners[:cut]

    def dump(self) -> list:
        return [[item.meta.dump(), item.data, item.arrival, partners]
                for item, partners in zip(self.items, self.partners)]

    @classmethod
    def load(cls, dumped) -> "Side":
        side = cls()
        for meta, data, arrival, partners in dumped:
            item = Item(Meta.load(meta), unpack(data), data, False, arrival)
            side.keys.append((item.meta, data))
            side.items.append(item)
            side.partners.append(partners)
        return side


class JoinBucket:
    """A key's left and right items, and the tombstones whose items have not come (`pending`)."""

    __slots__ = ("spec", "sides", "pending")
    dirty = None  # a join does all its work as items come

    def __init__(self, spec: JoinSpec):
        self.spec = spec
        self.sides = (Side(), Side())
        self.pending = None

    def add(self, item, combine) -> list:
        """Add an item or a tombstone; returns the results it makes and retracts (`combine` is the operator)."""
        identity = (item.meta, item.data)
        side = item.meta[-1]
        if item.tombstone:
            position = self.sides[side].find(identity)
            if position < 0:
                self.pending = early_tombstones.wait(self.pending, identity)
                return []
            return combine.remove(self.sides, side, position, item)
        if self.pending and early_tombstones.cancel(self.pending, identity):
            return []
        return combine.insert(self.sides, side, item)

    def flush(self, combine) -> list:
        return []

    def collect(self, time) -> int:
        """Forget what no item to come can pair with; returns orphan tombstones seen."""
        left, right = self.sides
        left.forget(time, self.spec.upper)
        right.forget(time, -self.spec.lower)
        return early_tombstones.orphans(self.pending, time)

    @property
    def latest(self):
        """The latest time at which a punctuation lets `collect` forget something (or its latest item's time, if
        later), or None if it holds nothing."""
        (left, right), spec = self.sides, self.spec
        times = []
        if left.items:
            times.append(left.items[-1].meta[0] + max(spec.upper, 0))
        if right.items:
            times.append(right.items[-1].meta[0] + max(-spec.lower, 0))
        return max(times + early_tombstones.times(self.pending), default=None)

    @property
    def forgets_from(self):
        """The earliest punctuation at which `collect` forgets an item, or None if it holds none."""
        (left, right), spec = self.sides, self.spec
        times = []
        if left.items:
            times.append(left.items[0].meta[0] + spec.upper)
        if right.items:
            times.append(right.items[0].meta[0] - spec.lower)
        return min(times, default=None)

    @property
    def empty(self) -> bool:
        return not self.sides[LEFT].items and not self.sides[RIGHT].items and not self.pending

    def dump(self) -> list:
        return [self.sides[LEFT].dump(), self.sides[RIGHT].dump(), early_tombstones.dump(self.pending)]

    @classmethod
    def load(cls, dumped, spec: JoinSpec) -> "JoinBucket":
        left, right, pending = dumped
        bucket = cls(spec)
        bucket.sides = (Side.load(left), Side.load(right))
        bucket.pending = early_tombstones.load(pending)
        return bucket


class JoinOperator(KeyedOperator):
    """Joins the items of its two tagged inputs (see the module's docstring), keyed by `key(l)` on the left and
    `spec.right_key(r)` on the right.

    >>> from flamespark.core.batch import Batch
    >>> from flamespark.core.codec import pack
    >>> from flamespark.core.items import Item, Meta
    >>> join = JoinOperator("ads", lambda e: e["ad"], JoinSpec(lambda e: e["ad"], 0, 60, "left"))
    >>> state = join.new_state()
    >>> shown = {"ad": "x"}
    >>> join.take(Batch.of_items([Item(Meta(0, "shown", 0, (0, LEFT)), shown, pack(shown))]), state).payloads
    [{'left': {'ad': 'x'}, 'right': None}]
    >>> click = {"ad": "x", "user": 7}
    >>> made = join.take(Batch.of_items([Item(Meta(20, "clicks", 0, (0, RIGHT)), click, pack(click))]), state)
    >>> [(weight, payload["right"]) for weight, payload in zip(made.weights, made.payloads)]
    [(1, {'ad': 'x', 'user': 7}), (-1, None)]
    """

    kind = "interval_join"

    def __init__(self, name, key, spec: JoinSpec):
        super().__init__(name, key)
        self.spec = spec
        self.right_key = spec.right_key
        self.lower, self.upper = spec.lower, spec.upper
        self.pairs = spec.how != "left_anti"
        self.unmatched = spec.how != "inner"
        self._keys = (self.key, self.right_key)

    def new_bucket(self) -> JoinBucket:
        return JoinBucket(self.spec)

    def load_bucket(self, dumped) -> JoinBucket:
        return JoinBucket.load(dumped, self.spec)

    def dump_bucket(self, bucket: JoinBucket) -> list:
        return bucket.dump()

    @property
    def combine(self):
        return self  # a bucket calls back `insert` and `remove`

    def key_of(self, item) -> bytes:
        """The encoding of the item's key: `key(l)` on the left side, `right_key(r)` on the right."""
        side = item.meta[-1]
        key = self._called("right key" if side else "key", self._keys[side], item.payload, item)
        return self._encoded(key, item)

    def keys_of(self, batch) -> list:
        """The encoding of each row's key, by its side."""
        return [self.key_of(batch.item(row)) for row in range(len(batch))]

    def insert(self, sides, side: int, item) -> list:
        """What adding `item` on `side` makes: its pairs, and, for a left item without partner, its unmatched
        result; a right item's first partners lose theirs."""
        left, right = sides
        ts = item.meta[0]
        out = []
        if side == LEFT:
            partners = right.between(ts + self.lower, ts + self.upper)
            if self.pairs:
                out += [self._pair(item, right.items[i]) for i in partners]
            if not partners and self.unmatched:
                out.append(self._unmatched(item, item.arrival))
            left.insert(item, len(partners))
            return out
        for i in left.between(ts - self.upper, ts - self.lower):
            if self.pairs:
                out.append(self._pair(left.items[i], item))
            left.partners[i] += 1
            if left.partners[i] == 1 and self.unmatched:
                out.append(tombstone(self._unmatched(left.items[i], item.arrival)))
        right.insert(item, 0)
        return out

    def remove(self, sides, side: int, position: int, gone) -> list:
        """What removing the item at `position` of `side` (a tombstone `gone` came for it) retracts, and the
        unmatched results of left items it leaves without partner."""
        left, right = sides
        if side == LEFT:
            item = left.items[position]
            ts = item.meta[0]
            partners = left.pop(position)
            out = []
            if self.pairs:
                out += [tombstone(self._pair(item, right.items[i]))
                        for i in right.between(ts + self.lower, ts + self.upper)]
            if not partners and self.unmatched:
                out.append(tombstone(self._unmatched(item, gone.arrival)))
            return out
        item = right.items[position]
        ts = item.meta[0]
        right.pop(position)
        out = []
        for i in left.between(ts - self.upper, ts - self.lower):
            if self.pairs:
                out.append(tombstone(self._pair(left.items[i], item)))
            left.partners[i] -= 1
            if not left.partners[i] and self.unmatched:
                out.append(self._unmatched(left.items[i], gone.arrival))
        return out

    def _pair(self, left, right) -> Item:
        later, other = (left, right) if left.meta > right.meta else (right, left)
        partner = other.meta
        meta = new_meta(Meta, later.meta + (partner[0], _source_hash(partner[1]), *partner[2:]))
        data = b"".join((_PAIR_HEADER, left.data, _RIGHT, right.data))
        payload = {"left": left.payload, "right": right.payload}
        return Item(meta, payload, data, False, max(left.arrival, right.arrival))

    def _unmatched(self, left, arrival: float) -> Item:
        """The result of left item `left` while it has no partner, with `arrival` as its latency's start."""
        meta = left.meta
        at = new_meta(Meta, (meta[0] + max(self.upper, 0), *meta[1:]))
        if not self.pairs:  # left_anti
            return Item(at, left.payload, left.data, False, arrival)
        return Item(at, {"left": left.payload, "right": None}, b"".join((_PAIR_HEADER, left.data, _RIGHT, _NONE)),
                    False, arrival)


_source_hashes = {}


def _source_hash(source: str) -> int:
    """A source's name as a path index: a pair's meta extends one item's meta by the other's, whose source is a
    string where the path holds ints."""
    hashed = _source_hashes.get(source)
    if hashed is None:
        hashed = _source_hashes[source] = event_tiebreak(source.encode())
    return hashed
