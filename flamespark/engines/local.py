"""The local engine: in-process, single-threaded and deterministic (when unpaced)."""
import time as clock
from array import array
from bisect import bisect_right
from contextlib import nullcontext
from functools import partial
from math import inf

from barrier.barrier import Barrier
from flamespark.core.codec import unpack
from flamespark.io.inputs import check_input_names, is_kafka, source_events
from flamespark.io.kafka import topic_events, topic_lanes
from flamespark.result import Result
from flamespark.runtime.changes import Cause, Changelog, StepChanges
from flamespark.runtime.heap import collect_if_crowded, collections_paused
from flamespark.runtime.metrics import run_metrics
from flamespark.runtime.options import RunOptions
from flamespark.runtime.plan import build_plan
from flamespark.runtime.punctuations import Punctuations
from flamespark.runtime.status_line import status_line


def lane_events(source: str, given):
    """Checked events of one source as `(lane, (ts, payload))`, and `(lane, None)` once a lane ran out. A
    source's lane is the source itself, or for a Kafka topic `(source, partition)`."""
    if is_kafka(given):
        yield from topic_events(source, given)
        return
    for event in source_events(source, given):
        yield source, event
    yield source, None


def interleave(inputs: dict):
    """Checked events of all sources as `(lane, (ts, payload))` (see `lane_events`), one source at a time in
    turn. A lane that ran out gives `(lane, None)` once."""
    iterators = [lane_events(source, given) for source, given in inputs.items()]
    if len(iterators) == 1:  # one source takes no turns: no list of the sources per event
        yield from iterators[0]
        return
    while iterators:
        for iterator in list(iterators):
            event = next(iterator, None)
            if event is None:
                iterators.remove(iterator)
            else:
                yield event


class LocalRun:
    """One run of a graph over finite inputs.

    Unpaced, every event is applied as it is read, and a punctuation issued
    every `punctuate_every` events. Paced (`rate` events/s), the k-th event
    arrives k / rate s after the start and its latency counts from then.
    An engine that keeps up applies each event on arrival. One that falls
    behind finds several events waiting when it turns to them (counting
    those it held back before): it admits them all, advances the
    punctuation, and applies in meta order only the admitted events at or
    below it, which no late event can precede any more. The others it holds
    back, in meta order, and applies them only in time to spare, before the
    next event is due, or once the punctuation reaches them (or the input
    ends). So under overload it applies events as the buffered mode would,
    in order (what it held back replays nothing), while their results are
    released no later; with time to spare, what it held back is computed
    early again. Within a step, the boundary operators take the items that
    reached them in topological order, each all of its own before the next
    takes any, and then do the work they left waiting (`flush`): so a step
    ends with the operators settled, and an operator's results for a sink
    reach it without waiting for the operators downstream of it on other
    paths (the inverted index's postings for its collectors). A
    paced run has the barrier cancel the tombstones that met their items
    (`Barrier.settle`) after each turn's events, and again while it waits
    for the next arrival (only until it is due), so that the pairs are not
    held until their punctuation and punctuations, the last above all, need
    not cancel them.

    With `changes`, what reaches the sinks is also kept as a changelog: an
    item as it arrives, a tombstone at the end of its step (an event applied,
    or a punctuation, where the baseline's buffers release).
    """

    def __init__(self, graph, options: RunOptions):
        self.plan = build_plan(graph, options.mode)
        self.states = {name: op.new_state() for name, op in self.plan.operators.items() if op.boundary}
        self.sources = graph.sources
        self.punctuations = Punctuations(self.sources, options.reorder_latency, options.late)
        self.punctuate_every = options.punctuate_every
        self.rate = options.rate
        self.shows_progress = options.shows_progress
        self.barrier = Barrier()
        self.step = StepChanges() if options.changes else None
        self.changelog = Changelog(self.plan.sinks.values()) if options.changes else None
        self.cause = None  # the event being delivered, while changes are kept
        self.admitted = []  # `(source, item)` of events admitted and not yet applied, in meta order
        # The items that reached each boundary operator and wait for it to take them (`flush`, in topological order).
        self.waiting = {name: [] for name, op in self.plan.operators.items() if op.boundary}
        self.deliver = self.plan.wire(self._boundary)
        self.issued = -inf
        self.outputs = {sink: [] for sink in self.plan.sinks.values()}
        self.output_times = {sink: array("q") for sink in self.plan.sinks.values()}  # each output's event time
        self.latencies_ms = array("d")  # 8 bytes an output, where a list of floats takes 32
        self.events = 0
        self.issued_count = 0  # punctuations issued
        self.peak_buffered = 0
        self._buffers = [self.states[buffer.name] for buffer in self.plan.buffers()]
        buffers = {buffer.name for buffer in self.plan.buffers()}
        # Per boundary operator, in topological order: how it takes items, finishes, punctuates, and whether it
        # punctuates at +inf (a keyed operator would only forget state the run is about to drop whole).
        self._operators = [
            (op.take, op.flush, op.punctuate, self.states[name], self.deliver[name], self.waiting[name], name in buffers)
            for name, op in self.plan.operators.items() if op.boundary
        ]

    def _boundary(self, target, send):
        """What takes the items reaching `target`: the barrier for a sink, else the list where they wait for the
        operator to take them at the end of the step (`flush`)."""
        if send is None:
            sink, push = self.plan.sinks[target], self.barrier.push
            if self.step is None:
                return partial(push, sink)  # no frame of its own, where a lambda would add one an output
            note, waiting, now = self.step.add, self.step.waiting, clock.perf_counter
            add = self.changelog.sinks[sink].add

            def push_and_record(item):
                push(sink, item)
                # Most items reaching a sink carry a payload that the step retracted nowhere: a change at once.
                if (item.tombstone or item.data in waiting) and not note(sink, item, self.cause):
                    return
                add(item, now())

            return push_and_record
        return self.waiting[target].append

    def run(self, inputs: dict) -> Result:
        check_input_names(self.sources, inputs)
        lanes = {source: topic_lanes(source, given) for source, given in inputs.items() if is_kafka(given)}
        if lanes:  # a topic's partitions are lanes of their own: each judges lateness by its own events
            unlaned = self.punctuations
            self.punctuations = Punctuations(self.sources, unlaned.reorder_latency, unlaned.late, lanes=lanes)
            self.deliver.update((lane, self.deliver[source]) for source, parts in lanes.items() for lane in parts)
        started = clock.perf_counter()
        with collections_paused(), status_line(self.status) if self.shows_progress else nullcontext():
            if self.rate is None:
                self._run_unpaced(interleave(inputs))
            else:
                self._run_paced(interleave(inputs), started)
            self.apply([])  # every source has ended: what still waits is final
            self.punctuate()  # +inf
        return self.result(clock.perf_counter() - started)

    def _run_unpaced(self, events):
        # `apply` of one event, whose admitted list is empty before and after: nothing waits in an unpaced run.
        admit, deliver = self.punctuations.admit, self._deliver
        since_punctuation = 0
        for source, event in events:
            if event is None:
                self.punctuations.end(source)
                continue
            item = admit(source, *event, clock.perf_counter())
            if item is not None:
                deliver(source, item)
                self.events += 1
            since_punctuation += 1
            if since_punctuation >= self.punctuate_every:
                since_punctuation = 0
                self.punctuate()

    def _run_paced(self, events, started):
        interval = 1.0 / self.rate
        waiting = []
        position = 0
        for source, event in events:
            if event is None:
                self.punctuations.end(source)
                continue
            due = started + position * interval
            position += 1
            if due > clock.perf_counter():
                self._apply_waiting(waiting)
                self._apply_held_back(due)  # in the time to spare until `due`
                self.barrier.settle(lambda: clock.perf_counter() < due)  # in what is left of it
                delay = due - clock.perf_counter()
                if delay > 0:
                    clock.sleep(delay)
            waiting.append((source, *event, due))
        self._apply_waiting(waiting)

    def _apply_waiting(self, waiting: list):
        if waiting:
            self.apply(waiting, behind=len(waiting) + len(self.admitted) > 1)
            waiting.clear()
            self.barrier.settle()  # not to hold the retracted items until their punctuation
            self.punctuate()

    def _apply_held_back(self, until: float):
        """Apply in meta order the admitted events a turn behind held back, while the clock is before `until`."""
        held_back = self.admitted
        applied = 0
        while applied < len(held_back) and clock.perf_counter() < until:
            self._deliver(*held_back[applied])
            applied += 1
        del held_back[:applied]
        self.events += applied

    def apply(self, events, behind: bool = False):
        """Admit `(source, ts, payload, arrival)` events in arrival order, then apply in meta order the
        admitted events that wait: all of them, or when `behind` those at or below the punctuation."""
        admit = self.punctuations.admit
        admitted = self.admitted
        for source, ts, payload, arrival in events:
            item = admit(source, ts, payload, arrival)
            if item is not None:
                admitted.append((source, item))
        if len(admitted) > 1:
            admitted.sort(key=_identity)
        if behind:
            self.punctuations.advance()
            final = bisect_right(admitted, self.punctuations.time(), key=_time)
            admitted, self.admitted = admitted[:final], admitted[final:]
        else:
            self.admitted = []
        for source, item in admitted:
            self._deliver(source, item)
        self.events += len(admitted)

    def _deliver(self, source: str, item):
        """Apply one admitted event: deliver it, let the operators settle, end the changelog's step."""
        if self.step is not None:
            self.cause = Cause.of(item)
        self.deliver[source](item)
        self.flush()
        if self.step is not None:
            self.take_changes()

    def take_changes(self):
        """End the changelog's step: its retractions join the changelog (its items joined as they came)."""
        for sink, tombstone, cause in self.step.take():
            self.changelog.retract(sink, tombstone, cause)

    def punctuate(self):
        """Advance every source's punctuation (which judges its lateness) and issue their minimum if it rose."""
        collect_if_crowded()
        self.punctuations.advance()
        time = self.punctuations.time()
        if time <= self.issued:
            return
        self.issued = time
        self.issued_count += 1
        self.note_buffered()  # items pile up between punctuations: the most is held around one
        sent = False  # every operator was flushed at the end of the last step: until one sends, none need be
        for take, flush, punctuate, state, send, waiting, at_inf in self._operators:
            if sent:
                _take(take, flush, state, send, waiting)
            if at_inf or time < inf:
                for item in punctuate(time, state):
                    send(item)
                    sent = True
        if self._buffers:
            self.note_buffered()  # and once what the baseline's buffers released has reached the barrier
        if time == inf:  # every operator has taken what reached it, in the loop above
            self._drop_operators()
        if self.step is not None:
            self.take_changes()
        released = self.barrier.punctuate(time)
        if released:
            # An output is out once the barrier has released it, as on Spark.
            self._output(released, clock.perf_counter())

    def _output(self, released: list, now: float):
        """Add the released items' payloads to the outputs and stamp their latencies. It empties `released` as
        it goes, so that an item nothing else holds (at +inf, none) is freed while still in the cache."""
        outputs, times, latencies = self.outputs, self.output_times, self.latencies_ms
        released.reverse()
        while released:
            item = released.pop()
            # The payload the operator made, equal to its encoding's decoding; the barrier holds again without
            # payloads the pairs that `settle` took out and had to put back.
            payload = item.payload
            outputs[item.sink].append(unpack(item.data) if payload is None else payload)
            times[item.sink].append(item.meta[0])
            latencies.append((now - item.arrival) * 1000.0)

    def flush(self):
        """End a step: every boundary operator, in topological order, takes the items that reached it and does
        the work it left waiting. So an operator's results all leave before the operators after it take any:
        those that go to a sink reach it without waiting for the work of the operators beside their path."""
        for take, flush, _, state, send, waiting, _ in self._operators:
            _take(take, flush, state, send, waiting)

    def _drop_operators(self):
        """After +inf nothing reaches an operator: free their state, by reference counting, before the barrier's
        last release makes the last outputs, so that the run never holds both."""
        self.states = self.deliver = self.waiting = self._operators = None
        self._buffers = []

    def status(self) -> str:
        """The run's progress, for a status line: it reads counters only."""
        return (f"{self.events} event(s) applied, {self.barrier.released} result(s) released, "
                f"{len(self.punctuations.dead_letters)} late")

    def note_buffered(self):
        buffered = len(self.barrier)
        if self._buffers:
            buffered += sum(len(buffer) for buffer in self._buffers)
        if buffered > self.peak_buffered:
            self.peak_buffered = buffered

    def result(self, wall_s) -> Result:
        barrier = self.barrier
        metrics = run_metrics(
            events=self.events, arrived=barrier.arrived, tombstones=barrier.tombstones, released=barrier.released,
            late_dropped=len(self.punctuations.dead_letters), late_adjusted=self.punctuations.counts()["late_adjusted"],
            peak_buffered=self.peak_buffered, wall_s=wall_s, latencies_ms=self.latencies_ms,
            rounds=self.issued_count, engine={"name": "local", "punctuations": self.issued_count},
        )
        result = Result(self.outputs, list(self.punctuations.dead_letters), metrics, self.latencies_ms.tolist())
        if self.changelog is not None:
            self.changelog.fill(result)
        return result


def _take(take, flush, state, send, waiting: list):
    """A boundary operator takes the items `waiting` for it (none reach it meanwhile: the graph has no cycle),
    then does the work it left waiting; what it makes goes on to `send`."""
    if waiting:
        take(waiting, state, send)
        waiting.clear()
    for out in flush(state):
        send(out)


def _identity(entry):
    return entry[1].identity


def _time(entry):
    return entry[1].meta.ts
