"""The Impatience sorter against a reference sort: the paper's example, equal keys, merges, removals, punctuations."""
import math
from itertools import count

import pytest
from hypothesis import given, settings, strategies as st

from barrier.impatience import ImpatienceSorter

SORTERS = [ImpatienceSorter, lambda: ImpatienceSorter(huffman=True)]
SORTER_IDS = ["sort-merge", "huffman"]


def check_runs(s, exact_tails=True):
    """The structure invariants, through the private fields; after `remove_at`, a tail may exceed its run's
    last key (not `exact_tails`)."""
    n = len(s._keys)
    assert len(s._vals) == len(s._start) == len(s._heads) == n
    for k, v, start, head in zip(s._keys, s._vals, s._start, s._heads):
        assert len(k) == len(v)
        assert 0 <= start < len(k)  # empty runs are removed
        assert all(a <= b for a, b in zip(k, k[1:]))
        assert head == k[start]
    # _tails holds the tails of all runs but the top one, whose is _tail.
    tails = s._tails + ([s._tail] if n else [])
    if exact_tails:
        assert tails == [k[-1] for k in s._keys]
    else:
        assert all(tail >= k[-1] for tail, k in zip(tails, s._keys))
    assert all(a < b for a, b in zip(tails, tails[1:]))
    assert len(s) == sum(len(k) - start for k, start in zip(s._keys, s._start))
    if n:
        assert s._topk is s._keys[-1] and s._topv is s._vals[-1]
    else:
        assert s._tail is None


class Reference:
    """A list of (ts, seq, value), sorted stably on every flush."""

    def __init__(self):
        self.items = []
        self.seq = count()

    def push(self, ts, value):
        self.items.append((ts, next(self.seq), value))

    def flush(self, T):
        if T == math.inf:
            out, self.items = self.items, []
        else:
            out = [e for e in self.items if e[0] <= T]
            self.items = [e for e in self.items if not e[0] <= T]
        out.sort(key=lambda e: e[:2])
        return [e[2] for e in out]

    def at(self, ts):
        return [value for key, _, value in self.items if key == ts]

    def remove_at(self, ts, values):
        self.items = [e for e in self.items if not (e[0] == ts and e[2] in values)]


@pytest.mark.parametrize("make", SORTERS, ids=SORTER_IDS)
def test_paper_example(make):
    # 2 6 5 1 2* 4 3 7 4* 8 inf*
    s = make()
    out = []
    for item in [2, 6, 5, 1, "2*", 4, 3, 7, "4*", 8, "inf*"]:
        if isinstance(item, str):
            T = math.inf if item == "inf*" else int(item[:-1])
            out.append(s.flush(T))
        else:
            s.push(item, item)
        check_runs(s)
    assert out == [[1, 2], [3, 4], [5, 6, 7, 8]]
    assert len(s) == 0 and s.runs == 0


def test_paper_example_runs():
    # Fig. 4: after the first punctuation two runs are left, [6] and [5].
    s = ImpatienceSorter()
    for ts in (2, 6, 5, 1):
        s.push(ts, ts)
    assert s.runs == 3
    assert s.flush(2) == [1, 2]
    assert s.runs == 2 and s.min_ts == 5


@pytest.mark.parametrize("make", SORTERS, ids=SORTER_IDS)
def test_empty(make):
    s = make()
    assert s.flush(10) == [] and s.flush(math.inf) == []
    assert len(s) == 0 and not s
    assert s.min_ts is None
    s.push(3, "a")
    assert s and len(s) == 1 and s.min_ts == 3
    assert s.flush(2) == [] and s.flush(3) == ["a"]
    assert s.flush(3) == [] and len(s) == 0
    s.push(1, "b")  # below what was already flushed: still accepted
    assert s.flush(1) == ["b"]


@pytest.mark.parametrize("make", SORTERS, ids=SORTER_IDS)
def test_equal_keys_keep_push_order(make):
    # 5 6 5 6 5 spreads the 5s over three runs.
    s = make()
    pushes = [(5, "a"), (6, "b"), (5, "c"), (6, "d"), (5, "e"), (5, "f"),
              (4, "g"), (6, "h"), (5, "i")]
    for ts, v in pushes:
        s.push(ts, v)
        check_runs(s)
    assert s.runs > 2
    assert s.at(5) == ["a", "c", "e", "f", "i"] and s.at(7) == []
    assert s.flush(4) == ["g"]
    assert s.at(4) == [] and s.at(6) == ["b", "d", "h"]
    assert s.flush(5) == ["a", "c", "e", "f", "i"]
    assert s.flush(math.inf) == ["b", "d", "h"]


def test_huffman_merges_non_adjacent_runs_stably():
    # Head runs of sizes 1, 4, 1 (oldest first): Huffman merges the 1s first,
    # then ties must still come out in run order.
    s = ImpatienceSorter(huffman=True)
    for ts, v in [(0, "a0"), (9, "a9"), (0, "b0"), (1, "b1"), (1, "b1'"),
                  (1, "b1''"), (8, "b8"), (0, "c0")]:
        s.push(ts, v)
    assert s.runs == 3
    assert s.flush(1) == ["a0", "b0", "c0", "b1", "b1'", "b1''"]


def test_long_run_cursor_and_compaction():
    s = ImpatienceSorter()
    for i in range(10_000):
        s.push(i, i)
    out = []
    for T in range(0, 10_000, 7):
        out += s.flush(T)
        assert len(s) == 10_000 - len(out)
    check_runs(s)
    assert len(s._keys[0]) < 1000  # the consumed prefix got dropped
    out += s.flush(math.inf)
    assert out == list(range(10_000))


def test_tuple_keys_and_inf():
    s = ImpatienceSorter()
    for i, ts in enumerate([(1, "b"), (0, "z"), (1, "a"), (1, "b"), (2, "")]):
        s.push(ts, i)
    assert s.min_ts == (0, "z")
    assert s.flush((1, "b")) == [1, 2, 0, 3]
    assert s.flush(math.inf) == [4]


def late_stream(rng, n, spread, key=lambda x: x):
    """(key, value) pairs: keys mostly ascending, some pushed back by up to
    spread, many equal; values are tuples, which must come out as is."""
    for i in range(n):
        ts = i // 3 - (rng.randrange(spread) if rng.random() < 0.5 else 0)
        yield key(ts), (i, "v")


@pytest.mark.parametrize("key", [
    lambda x: x,                    # narrow int range: radix sorted
    lambda x: x * 1000,             # wider than 2**16
    lambda x: x - 2**62 if x % 2 else x + 2**62,  # range overflows int64
    lambda x: x * 2**64,            # beyond int64: list.sort
    float,                          # not ints: list.sort
], ids=["narrow", "wide", "int64-span", "bigint", "float"])
@pytest.mark.parametrize("freq", [700, 3000])
def test_large_merges_match_reference(key, freq):
    import random

    rng = random.Random(freq)
    s = ImpatienceSorter()
    ref = Reference()
    for i, (ts, v) in enumerate(late_stream(rng, 6000, 400, key)):
        s.push(ts, v)
        ref.push(ts, v)
        if i % freq == freq - 1:
            T = key(i // 3 - 200)
            assert s.flush(T) == ref.flush(T)
            check_runs(s)
    assert s.runs > 10
    assert s.flush(math.inf) == ref.flush(math.inf)


ops = st.lists(
    st.one_of(
        st.tuples(st.just("push"), st.integers(0, 40)),
        st.tuples(st.just("flush"),
                  st.one_of(st.integers(-1, 42), st.just(math.inf))),
    ),
    max_size=150,
)
# "remove" removes every other value buffered with a key, from the first or the second on.
ops_with_removals = st.lists(
    st.one_of(
        st.tuples(st.just("push"), st.integers(0, 40)),
        st.tuples(st.just("flush"),
                  st.one_of(st.integers(-1, 42), st.just(math.inf))),
        st.tuples(st.just("remove"), st.integers(0, 40), st.integers(0, 1)),
    ),
    max_size=150,
)


def run_against_reference(make, script, key=lambda x: x):
    s = make()
    ref = Reference()
    removed = False
    for i, (op, x, *first) in enumerate(script):
        if op == "push":
            s.push(key(x), i)
            ref.push(key(x), i)
        elif op == "remove":
            values = s.at(key(x))[first[0]::2]
            s.remove_at(key(x), values)
            ref.remove_at(key(x), values)
            removed = True
        else:
            T = x if x == math.inf else key(x)
            assert s.flush(T) == ref.flush(T)
        if x != math.inf:
            assert s.at(key(x)) == ref.at(key(x))
        assert len(s) == len(ref.items)
        assert s.min_ts == min((e[0] for e in ref.items), default=None)
        check_runs(s, exact_tails=not removed)
    assert s.flush(math.inf) == ref.flush(math.inf)
    assert len(s) == 0


@settings(max_examples=200, deadline=None)
@given(ops)
def test_matches_reference(script):
    run_against_reference(ImpatienceSorter, script)


@settings(max_examples=300, deadline=None)
@given(ops_with_removals)
def test_removals_match_reference(script):
    run_against_reference(ImpatienceSorter, script)


def test_a_top_run_emptied_first_leaves_the_next_oldest_on_top():
    s = ImpatienceSorter()
    for ts, v in [(5, "a"), (3, "b"), (9, "c"), (7, "d")]:
        s.push(ts, v)  # runs [3, 7] and, on top, [5, 9]
    s.remove_at(9, ["c"])  # the top run keeps its tail 9 above its last key 5
    assert s.flush(5) == ["b", "a"]  # empties the top run, not [7]
    check_runs(s, exact_tails=False)
    assert s.runs == 1 and s._tail == 7
    for ts, v in [(8, "e"), (6, "f")]:
        s.push(ts, v)
    check_runs(s, exact_tails=False)
    assert s.flush(math.inf) == ["f", "d", "e"]


@settings(max_examples=100, deadline=None)
@given(ops)
def test_huffman_matches_reference(script):
    run_against_reference(lambda: ImpatienceSorter(huffman=True), script)


@settings(max_examples=100, deadline=None)
@given(ops)
def test_tuple_keys_match_reference(script):
    # Few distinct tuples: many ties, and comparisons past the first item.
    run_against_reference(ImpatienceSorter, script,
                          key=lambda x: (x // 8, -(x % 3)))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 30), max_size=200), st.integers(1, 12),
       st.integers(0, 10))
def test_nearly_sorted_stream_with_punctuations(delays, freq, latency):
    # The bench's setting in small: ts = i - delay, punctuation every freq
    # events at max seen - latency, late events dropped.
    s = ImpatienceSorter()
    ref = Reference()
    hi = T = -math.inf
    for i, d in enumerate(delays):
        ts = i - d
        if ts > T:
            hi = max(hi, ts)
            s.push(ts, i)
            ref.push(ts, i)
        if i % freq == freq - 1:
            T = hi - latency
            assert s.flush(T) == ref.flush(T)
            check_runs(s)
    assert s.flush(math.inf) == ref.flush(math.inf)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(-2, 3)), max_size=300))
def test_one_run_flushed_as_it_grows(steps):
    # Keys in order (repeats included) make one run, which flushes cut from the front: less than, as much as, or
    # more than stays, or nothing. (Its consumed prefix seldom passes the compaction threshold here: the
    # compaction of one run is `test_long_run_cursor_and_compaction`'s.)
    s = ImpatienceSorter()
    ref = Reference()
    ts = 0
    for i, (step, behind) in enumerate(steps):
        ts += step
        s.push(ts, i)
        ref.push(ts, i)
        assert s.runs == 1
        assert s.flush(ts - behind) == ref.flush(ts - behind)
        check_runs(s)
    assert s.flush(math.inf) == ref.flush(math.inf)
