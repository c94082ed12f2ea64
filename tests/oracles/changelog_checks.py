"""The changelog's invariants, checked the same way for every engine."""
from collections import Counter

from flamespark.core.codec import pack


def replay(changes: list) -> Counter:
    """The multiset of `(ts, payload)` a changelog leaves; fails if a `-` removes what is absent."""
    live = Counter()
    for record in changes:
        key = (record["ts"], pack(record["payload"]))
        if record["op"] == "+":
            assert record["cause"] is None, record
            live[key] += 1
        else:
            assert record["op"] == "-", record
            assert live[key] > 0, f"a retraction of what the changelog does not hold: {record}"
            live[key] -= 1
    return +live


def check_changelog(result, arrivals: dict, union_sinks=()):
    """Every sink's changelog replays to its released outputs; each `-` names a real, out-of-order event.

    `arrivals` maps each source to its `(ts, payload)` events in arrival order.
    A cause of a sink fed by one source must have come after an event of its
    source that it does not follow in time; one of `union_sinks`, fed by
    several, may be late only behind another source's events.
    """
    assert set(result.changes) == set(result.outputs)
    for sink, changes in result.changes.items():
        left = replay(changes)
        assert Counter(payload for _, payload in left.elements()) == Counter(map(pack, result.outputs[sink]))
        for record in changes:
            if record["op"] == "-":
                check_cause(record, arrivals, sink in union_sinks)


def check_cause(record: dict, arrivals: dict, union: bool):
    """The cause is the event at its position, no later than what it retracts, and (one source) out of order."""
    cause = record["cause"]
    events = arrivals[cause["source"]]
    assert 0 <= cause["position"] < len(events), record
    ts = events[cause["position"]][0]
    assert ts == cause["ts"] and ts <= record["ts"], record
    assert union or any(earlier >= ts for earlier, _ in events[: cause["position"]]), record


def check_changes(result, arrival: dict):
    """Every changelog of `result` replays to its released outputs, and each `-` names an event as it stands in
    `arrival` (the events of each source in arrival order), no later than what it retracts."""
    for sink, changes in result.changes.items():
        left = replay(changes)
        assert Counter(data for _, data in left.elements()) == Counter(map(pack, result.outputs[sink]))
        for record in changes:
            if record["op"] == "-":
                cause = record["cause"]
                assert arrival[cause["source"]][cause["position"]][0] == cause["ts"] <= record["ts"], record
