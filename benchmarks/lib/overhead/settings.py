"""The overhead benchmark's settings: its input, its Spark session, and how often it runs each query."""
from __future__ import annotations

from dataclasses import dataclass

from flamespark.core.errors import OptionError

BASELINES = ("key", "shard")


@dataclass(frozen=True)
class Settings:
    """What `benchmark` runs; the defaults are the README's measurement.

    events, keys, spacing_ms: `events` events over `keys` keys, `spacing_ms` of event time apart.
    percent, stddev_ms, seed: `percent` % of them delayed by |N(0, stddev_ms)|; `seed` draws keys and delays.
    batch_rows: rows a micro-batch, for both queries.
    repeat: measured runs of each query, alternating; after one warm-up run of each on `warmup_events` events.
    baseline: the order-ignorant query groups by "key" (a ValueState per key) or by "shard" (a msgpack dict).
    master, shards, conf: the Spark master, its shuffle partitions (= FlameSpark's shards), and Spark SQL
    settings `(key, value)` applied to both queries.
    """

    events: int = 20_000
    keys: int = 100
    spacing_ms: int = 10
    percent: float = 10.0
    stddev_ms: float = 1000.0
    seed: int = 0
    batch_rows: int = 1000
    repeat: int = 2
    warmup_events: int = 200
    baseline: str = "key"
    master: str = "local[2]"
    shards: int = 2
    conf: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        for name in ("events", "keys", "spacing_ms", "batch_rows", "repeat", "warmup_events", "shards"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise OptionError(f"{name} must be an integer >= 1, got {value!r}")
        if self.baseline not in BASELINES:
            raise OptionError(f"baseline must be one of {', '.join(BASELINES)}, got {self.baseline!r}")
