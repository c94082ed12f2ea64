"""Hypothesis strategies for inputs whose disorder stays within a reorder latency."""
from hypothesis import strategies as st


@st.composite
def in_order_events(draw, payloads, max_size=30, max_step=3):
    """(ts, payload) pairs in event-time order; equal times allowed."""
    values = draw(st.lists(payloads, max_size=max_size))
    ts, events = 0, []
    for value in values:
        ts += draw(st.integers(0, max_step))
        events.append((ts, value))
    return events


@st.composite
def disordered(draw, events, reorder_latency):
    """The events in an arrival order where none is more than `reorder_latency` behind the newest."""
    delays = [draw(st.integers(0, reorder_latency)) for _ in events]
    order = sorted(range(len(events)), key=lambda i: events[i][0] + delays[i])
    return [events[i] for i in order]


def unique_documents(draw, vocabulary=("ant", "bee", "cat", "dog", "eel"), max_size=12):
    docs = draw(st.lists(st.lists(st.sampled_from(vocabulary), min_size=1, max_size=4), max_size=max_size))
    return [{"id": i, "words": words} for i, words in enumerate(docs)]


def batch_sizes():
    """How many events a local run applies per step: one at a time, a few, or all of a drawn input at once, so
    that tests draw the batch boundaries as well as the disorder."""
    return st.one_of(st.just(1), st.integers(1, 6), st.integers(1, 60))
