"""Stage 0: events in, in arrival order; items with meta, late events, and each source's punctuations out."""
import math
import time

from flamespark.runtime.late import LatePolicy
from flamespark.core.codec import pack, unpack
from flamespark.engines.spark.processors.blob import BlobProcessor, metric_row, punctuation_rows
from flamespark.engines.spark.rows import END, LATE, concat, control_row, frame
from flamespark.runtime.ingest import EventMinter


def _batch_time_ms(timerValues) -> int:
    """The micro-batch's processing time, which Spark keeps in its offset log, so a rerun batch sees the same."""
    now = timerValues.getCurrentProcessingTimeInMs()
    return now if now > 0 else int(time.time() * 1000)


class IngestProcessor(BlobProcessor):
    """Stage 0, one group for `sources`: late policy, meta, stateless operators, punctuations.

    A source ends at its end row, or once it has delivered `expected[source]`
    events (a directory read up to the files it held at the start). With
    `idle_timeout` (seconds), a source that has delivered nothing for that
    long stops holding the others back: its punctuation is raised to the
    lowest of the other sources', so that its later events at or below that
    are late.
    """

    def __init__(self, topology, sources: list, reorder_latency: int, late: str, expected: dict | None = None,
                 idle_timeout: float | None = None):
        self.topology = topology
        self.sources = sources
        self.reorder_latency = reorder_latency
        self.late = late
        self.expected = expected or {}
        self.idle_ms = None if idle_timeout is None else idle_timeout * 1000

    def handleInputRows(self, key, rows, timerValues):
        now = _batch_time_ms(timerValues)
        state = self.load({"sources": {}, "seen": []})
        sources = {source: state["sources"].get(source) or _new_source(now) for source in self.sources}
        batch = concat(rows).sort_values("seq", kind="stable")
        late = {source: LatePolicy(self.late) for source in sources}
        minter = EventMinter()
        minter.load(state["seen"])
        out = []
        for row in batch.itertuples(index=False):
            progress = sources[row.target]
            progress["last_seen"] = now
            if row.kind == END:
                progress["ended"] = True
                continue
            progress["received"] += 1
            payload = unpack(row.payload)
            ts = late[row.target].admit(row.target, row.ts, payload, progress["horizon"])
            if ts is None:
                continue
            progress["events"] += 1
            progress["max_ts"] = ts if progress["max_ts"] is None else max(progress["max_ts"], ts)
            out.extend(self.topology.rows_after(row.target, minter.mint(row.target, ts, payload, row.arrival)))
        before = {source: progress["horizon"] for source, progress in sources.items()}
        for source, progress in sources.items():
            progress["horizon"] = max(progress["horizon"], self._horizon(source, progress))
        self._pass_idle(sources, now)
        minter.forget(min(progress["horizon"] for progress in sources.values()))
        advanced = {source: p["horizon"] for source, p in sources.items() if p["horizon"] > before[source]}
        out.extend(punctuation_rows(advanced, self.topology.shards))
        for source, progress in sources.items():
            policy = late[source]
            out.extend(control_row(LATE, source, payload=pack(dead)) for dead in policy.dead_letters)
            progress["late_dropped"] += len(policy.dead_letters)
            progress["late_adjusted"] += policy.adjusted
            metrics = {k: progress[k] for k in ("events", "late_dropped", "late_adjusted")}
            out.append(metric_row("ingest", 0, dict(metrics, source=source)))
        state["seen"] = minter.dump()
        state["sources"] = sources
        self.save(state)
        yield frame(out)

    def _horizon(self, source, progress):
        """The source's own punctuation: +inf once it ended, else its newest time less the reorder latency."""
        expected = self.expected.get(source)
        if progress["ended"] or (expected is not None and progress["received"] >= expected):
            return math.inf
        if progress["max_ts"] is None:
            return -math.inf
        return progress["max_ts"] - self.reorder_latency - 1

    def _pass_idle(self, sources: dict, now: int):
        """Raise idle sources' punctuations to the lowest of the active ones'."""
        if self.idle_ms is None:
            return
        idle = {s for s, p in sources.items() if not p["ended"] and now - p["last_seen"] >= self.idle_ms}
        active = [p["horizon"] for s, p in sources.items() if s not in idle]
        if idle and active:
            for source in idle:
                sources[source]["horizon"] = max(sources[source]["horizon"], min(active))


def _new_source(now: int) -> dict:
    return {"max_ts": None, "horizon": -math.inf, "ended": False, "received": 0, "events": 0,
            "late_dropped": 0, "late_adjusted": 0, "last_seen": now}
