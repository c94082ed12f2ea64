"""The local engine: in-process, single-threaded and deterministic."""
import math
import time as clock

from barrier.barrier import Barrier
from flamespark.runtime.late import LatePolicy
from flamespark.runtime.punctuation import PunctuationClock
from flamespark.core.codec import unpack
from flamespark.core.errors import InputError
from flamespark.runtime.ingest import EventMinter, check_event_time, check_input_names
from flamespark.runtime.plan import build_plan
from flamespark.result import Result, latency_summary, replay_ratio


def interleave(inputs: dict):
    """Events of all sources as `(source, position, event)`, one source at a time in turn."""
    iterators = {source: enumerate(events) for source, events in inputs.items()}
    while iterators:
        for source, iterator in list(iterators.items()):
            step = next(iterator, None)
            if step is None:
                del iterators[source]
                yield source, None, None
            else:
                yield source, step[0], step[1]


class LocalRun:
    """One run of a graph over finite inputs: every event processed as it arrives."""

    def __init__(self, graph, mode="optimistic", reorder_latency=0, late="drop", punctuate_every=1):
        if isinstance(punctuate_every, bool) or not isinstance(punctuate_every, int) or punctuate_every < 1:
            raise ValueError(f"punctuate_every must be a positive integer, got {punctuate_every!r}")
        self.plan = build_plan(graph, mode)
        self.states = {name: op.new_state() for name, op in self.plan.operators.items() if op.boundary}
        self.sources = graph.sources
        self.clock = PunctuationClock(self.sources, reorder_latency)
        self.late = LatePolicy(late)
        self.punctuate_every = punctuate_every
        self.barrier = Barrier()
        self.minter = EventMinter()
        self.issued = -math.inf
        self.source_horizon = dict.fromkeys(self.sources, -math.inf)
        self.outputs = {sink: [] for sink in self.plan.sinks.values()}
        self.latencies_ms = []
        self.events = 0
        self.punctuations = 0
        self.peak_buffered = 0
        self._buffers = [self.states[buffer.name] for buffer in self.plan.buffers()]

    def run(self, inputs: dict) -> Result:
        check_input_names(self.sources, inputs)
        started = clock.perf_counter()
        since_punctuation = 0
        for source, position, event in interleave(inputs):
            if event is None:
                self.clock.end(source)
                continue
            self.ingest(source, position, event)
            since_punctuation += 1
            if since_punctuation >= self.punctuate_every:
                since_punctuation = 0
                self.punctuate(self.clock.time())
        self.punctuate(math.inf)
        return self.result(clock.perf_counter() - started)

    def ingest(self, source, position, event):
        where = f"input {source!r}, event #{position}"
        try:
            ts, payload = event
        except (TypeError, ValueError):
            raise InputError(f"{where}: expected a (ts, payload) pair, got {event!r}") from None
        ts = self.late.admit(source, check_event_time(ts, where), payload, self.source_horizon[source])
        if ts is None:
            return
        self.events += 1
        self.clock.observe(source, ts)
        self.deliver(source, self.minter.mint(source, ts, payload, clock.perf_counter()))
        self.note_buffered()

    def deliver(self, origin, item):
        """Push `item` from `origin` through everything downstream of it."""
        plan = self.plan
        pending = plan.route(origin, item)
        pending.reverse()
        while pending:
            target, item = pending.pop()
            if target in plan.sinks:
                self.barrier.push(plan.sinks[target], item)
                continue
            for out in reversed(plan.operators[target].process(item, self.states[target])):
                reached = plan.route(target, out)
                reached.reverse()
                pending.extend(reached)

    def punctuate(self, time):
        """Issue punctuation `time` (the minimum over sources); each source's own horizon judges lateness."""
        for source in self.sources:
            self.source_horizon[source] = self.clock.source_time(source)
        if time <= self.issued:
            return
        self.issued = time
        self.punctuations += 1
        for name, state in self.states.items():
            for item in self.plan.operators[name].punctuate(time, state):
                self.deliver(name, item)
        self.note_buffered()
        now = clock.perf_counter()
        for sink, item in self.barrier.punctuate(time):
            self.outputs[sink].append(unpack(item.data))
            self.latencies_ms.append((now - item.arrival) * 1000.0)
        self.minter.forget(time)

    def note_buffered(self):
        buffered = len(self.barrier) + sum(len(buffer) for buffer in self._buffers)
        if buffered > self.peak_buffered:
            self.peak_buffered = buffered

    def result(self, wall_s) -> Result:
        barrier = self.barrier
        metrics = {
            "events": self.events,
            "arrived_at_barrier": barrier.arrived,
            "tombstones": barrier.tombstones,
            "released": barrier.released,
            "replay_ratio": replay_ratio(barrier.arrived, barrier.released),
            "late_dropped": len(self.late.dead_letters),
            "late_adjusted": self.late.adjusted,
            "peak_buffered": self.peak_buffered,
            "punctuations": self.punctuations,
            "wall_s": wall_s,
            "events_per_s": self.events / wall_s if wall_s > 0 else None,
            "latency_ms": latency_summary(self.latencies_ms, wall_s, self.events, self.punctuations),
        }
        return Result(self.outputs, list(self.late.dead_letters), metrics)
