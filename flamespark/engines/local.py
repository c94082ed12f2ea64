"""The local engine: in-process, single-threaded and deterministic."""
import math
import time as clock

from barrier.barrier import Barrier
from flamespark.core.codec import unpack
from flamespark.io.inputs import check_input_names, source_events
from flamespark.runtime.metrics import run_metrics
from flamespark.runtime.plan import build_plan
from flamespark.runtime.progress import SourceProgress
from flamespark.result import Result


def interleave(inputs: dict):
    """Checked events of all sources as `(source, (ts, payload))`, one source at a time in turn.

    A source that ran out gives `(source, None)` once.
    """
    iterators = {source: source_events(source, given) for source, given in inputs.items()}
    while iterators:
        for source, iterator in list(iterators.items()):
            event = next(iterator, None)
            if event is None:
                del iterators[source]
            yield source, event


class LocalRun:
    """One run of a graph over finite inputs: every event processed as it arrives.

    The options are taken as given: `flamespark.runtime.options.RunOptions` checks them.
    """

    def __init__(self, graph, mode="optimistic", reorder_latency=0, late="drop", punctuate_every=1):
        self.plan = build_plan(graph, mode)
        self.states = {name: op.new_state() for name, op in self.plan.operators.items() if op.boundary}
        self.sources = graph.sources
        self.progress = SourceProgress(self.sources, reorder_latency, late)
        self.punctuate_every = punctuate_every
        self.barrier = Barrier()
        self.issued = -math.inf
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
        for source, event in interleave(inputs):
            if event is None:
                self.progress.end(source)
                continue
            self.ingest(source, *event)
            since_punctuation += 1
            if since_punctuation >= self.punctuate_every:
                since_punctuation = 0
                self.punctuate()
        self.punctuate()  # every source has ended: +inf
        return self.result(clock.perf_counter() - started)

    def ingest(self, source, ts, payload):
        """Take one checked event of `source`."""
        item = self.progress.admit(source, ts, payload, clock.perf_counter())
        if item is None:
            return
        self.events += 1
        self.deliver(source, item)
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

    def punctuate(self):
        """Advance every source's punctuation (which judges its lateness) and issue their minimum if it rose."""
        self.progress.advance()
        time = self.progress.time()
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

    def note_buffered(self):
        buffered = len(self.barrier) + sum(len(buffer) for buffer in self._buffers)
        if buffered > self.peak_buffered:
            self.peak_buffered = buffered

    def result(self, wall_s) -> Result:
        barrier = self.barrier
        metrics = run_metrics(
            events=self.events, arrived=barrier.arrived, tombstones=barrier.tombstones, released=barrier.released,
            late_dropped=len(self.progress.dead_letters), late_adjusted=self.progress.counts()["late_adjusted"],
            peak_buffered=self.peak_buffered, wall_s=wall_s, latencies_ms=self.latencies_ms,
            rounds=self.punctuations, engine={"name": "local", "punctuations": self.punctuations},
        )
        return Result(self.outputs, list(self.progress.dead_letters), metrics)
