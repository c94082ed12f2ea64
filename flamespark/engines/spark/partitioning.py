"""Grouping keys that Spark's hash partitioning spreads over distinct tasks.

A `groupBy(column)` shuffles a row to partition `pmod(murmur3(key, 42), n)`
of `spark.sql.shuffle.partitions = n`, so keys 0..n-1 collide (with n = 2,
keys 0 and 1 both go to partition 1) and groups meant to run side by side
would share one task. Rows carry keys chosen so that the i-th lands on
partition i mod n.
"""

_MASK = 0xFFFFFFFF
_SEED = 42  # Spark's HashPartitioning hashes with Murmur3Hash(seed=42)


def _rotate(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK


def spark_hash(key: int) -> int:
    """Spark's `hash(key)` of an INT column value (Murmur3_x86_32.hashInt, seed 42), as a signed int."""
    k1 = _rotate((key & _MASK) * 0xCC9E2D51 & _MASK, 15) * 0x1B873593 & _MASK
    h1 = (_rotate(_SEED ^ k1, 13) * 5 + 0xE6546B64) & _MASK
    h1 ^= 4
    h1 = (h1 ^ (h1 >> 16)) * 0x85EBCA6B & _MASK
    h1 = (h1 ^ (h1 >> 13)) * 0xC2B2AE35 & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def spark_partition(key: int, partitions: int) -> int:
    """The shuffle partition of `partitions` that a row with INT grouping key `key` goes to."""
    return spark_hash(key) % partitions


def spread_keys(count: int, partitions: int) -> list:
    """`count` distinct non-negative keys, the i-th going to shuffle partition `i % partitions`, smallest first."""
    found = {}
    candidate = 0
    needed = {index % partitions: index // partitions + 1 for index in range(count)}
    while any(len(found.get(target, ())) < n for target, n in needed.items()):
        found.setdefault(spark_partition(candidate, partitions), []).append(candidate)
        candidate += 1
    return [found[index % partitions][index // partitions] for index in range(count)]
