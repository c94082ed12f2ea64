"""What happens to an event that arrives after a punctuation covering its time."""
from flamespark.core.errors import LateEventError

POLICIES = ("drop", "adjust", "fail")


class LatePolicy:
    """Applies the user's late-event policy.

    An event is late when its time is at or below the punctuation its source
    had already promised (`punctuation`); the global punctuation, the minimum
    over sources, is never higher, so an admitted event is never behind it.

    `drop` (the default) keeps the event in `dead_letters`, `adjust` moves its
    time just after the punctuation, `fail` raises LateEventError.
    """

    def __init__(self, policy: str = "drop"):
        if policy not in POLICIES:
            raise ValueError(f"late policy must be one of {', '.join(POLICIES)}, got {policy!r}")
        self.policy = policy
        self.dead_letters = []
        self.adjusted = 0

    def admit(self, source: str, ts: int, payload, punctuation):
        """The event time to process the event at, or None if it is dropped."""
        if ts > punctuation:
            return ts
        if self.policy == "fail":
            raise LateEventError(
                f"event ts={ts} of source {source!r} arrived after punctuation {punctuation} "
                f"(payload {payload!r}); raise the reorder latency or use late='drop'/'adjust'"
            )
        if self.policy == "adjust":
            self.adjusted += 1
            return int(punctuation) + 1
        self.dead_letters.append({"source": source, "ts": ts, "payload": payload, "punctuation": punctuation})
        return None
