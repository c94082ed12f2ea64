"""The local engine: in-process, single-threaded and deterministic (when unpaced)."""
import time as clock
from array import array
from bisect import bisect_right
from contextlib import nullcontext

from flamespark.core.codec import unpack
from flamespark.engines.local_pipeline import Pipeline
from flamespark.io.inputs import check_input_names, is_kafka, source_events
from flamespark.io.kafka import topic_events, topic_lanes
from flamespark.result import Result
from flamespark.runtime.changes import Cause, Changelog, StepChanges
from flamespark.runtime.corrections import Corrections, summarised
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
    early again. A paced run has the barrier cancel the tombstones that met
    their items (`Barrier.settle`) after each turn's events, and again while
    it waits for the next arrival (only until it is due), so that the pairs
    are not held until their punctuation and punctuations, the last above
    all, need not cancel them.

    With `changes`, what reaches the sinks is also kept as a changelog: an
    item as it arrives, a tombstone at the end of its step (an event applied,
    or a punctuation, where the baseline's buffers release).

    With several reorder latencies, each level runs a `Pipeline` of its own
    over the events on time at its latency, released at its own
    punctuation: the first level's releases are the outputs, and what each
    later level changes among them are its corrections (`Corrections`).
    """

    def __init__(self, graph, options: RunOptions):
        self.sources = graph.sources
        self.punctuations = Punctuations(self.sources, options.reorder_latency, options.late)
        levels = len(self.punctuations.latencies)
        self.punctuate_every = options.punctuate_every
        self.rate = options.rate
        self.shows_progress = options.shows_progress
        self.step = StepChanges() if options.changes else None
        self.cause = None  # the event being delivered, while changes are kept
        self.plan = build_plan(graph, options.mode)
        self.changelog = Changelog(self.plan.sinks.values()) if options.changes else None
        self.corrections = Corrections(self.plan.sinks.values(), levels) if levels > 1 else None
        # The buffered mode applies events as its buffers release them: no event's arrival touches outputs.
        names_causes = self.corrections is not None and options.mode == "optimistic"
        self.pipelines = [Pipeline(self.plan, self._changelog_note() if options.changes else None)]
        self.pipelines += [Pipeline(build_plan(graph, options.mode),
                                    self.corrections.note(level) if names_causes else None)
                           for level in range(2, levels + 1)]
        self.admitted = []  # `(route, item)` of events admitted and not yet applied, in meta order
        self.outputs = {sink: [] for sink in self.plan.sinks.values()}
        self.output_times = {sink: array("q") for sink in self.plan.sinks.values()}  # each output's event time
        self.latencies_ms = array("d")  # 8 bytes an output, where a list of floats takes 32
        self.events = 0
        self.applied_by_level = [0] * levels
        self.issued_count = 0  # punctuations issued
        self.peak_buffered = 0

    @property
    def barrier(self):
        """The first level's barrier, which releases the outputs."""
        return self.pipelines[0].barrier

    @property
    def states(self) -> dict:
        """The first level's operator states, by operator name."""
        return self.pipelines[0].states

    def _changelog_note(self):
        """What notes in the changelog an item or tombstone reaching a sink."""
        step_add, waiting, now, sinks = self.step.add, self.step.waiting, clock.perf_counter, self.changelog.sinks

        def note(sink, item):
            # Most items reaching a sink carry a payload that the step retracted nowhere: a change at once.
            if (item.tombstone or item.data in waiting) and not step_add(sink, item, self.cause):
                return
            sinks[sink].add(item, now())

        return note

    def run(self, inputs: dict) -> Result:
        check_input_names(self.sources, inputs)
        lanes = {source: topic_lanes(source, given) for source, given in inputs.items() if is_kafka(given)}
        if lanes:  # a topic's partitions are lanes of their own: each judges lateness by its own events
            unlaned = self.punctuations
            self.punctuations = Punctuations(self.sources, unlaned.latencies, unlaned.late, lanes=lanes)
            for pipeline in self.pipelines:
                pipeline.deliver.update((lane, pipeline.deliver[source])
                                        for source, parts in lanes.items() for lane in parts)
        started = clock.perf_counter()
        with collections_paused(), status_line(self.status) if self.shows_progress else nullcontext():
            if self.rate is None:
                self._run_unpaced(interleave(inputs))
            else:
                self._run_paced(interleave(inputs), started)
            self.apply([])  # every source has ended: what still waits is final
            self.punctuate()  # +inf
        return self.result(clock.perf_counter() - started)

    def admit(self, source: str, ts: int, payload, arrival: float):
        """`(route, item)` of an event, or None if it is late at every level and dropped. Its route is its
        source or, with several levels, `(source, level)`: the first level it is on time at."""
        punctuations = self.punctuations
        if self.corrections is None:
            item = punctuations.admit(source, ts, payload, arrival)
            return None if item is None else (source, item)
        level = min(punctuations.level(source, ts), len(self.pipelines))  # an adjusted event: of the last level
        item = punctuations.admit(source, ts, payload, arrival)
        return None if item is None else ((source, level), item)

    def _run_unpaced(self, events):
        # `apply` of one event, whose admitted list is empty before and after: nothing waits in an unpaced run.
        admit, deliver = self.admit, self._deliver
        since_punctuation = 0
        for source, event in events:
            if event is None:
                self.punctuations.end(source)
                continue
            admitted = admit(source, *event, clock.perf_counter())
            if admitted is not None:
                deliver(*admitted)
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
                for pipeline in self.pipelines:  # in what is left of it
                    pipeline.barrier.settle(lambda: clock.perf_counter() < due)
                delay = due - clock.perf_counter()
                if delay > 0:
                    clock.sleep(delay)
            waiting.append((source, *event, due))
        self._apply_waiting(waiting)

    def _apply_waiting(self, waiting: list):
        if waiting:
            self.apply(waiting, behind=len(waiting) + len(self.admitted) > 1)
            waiting.clear()
            for pipeline in self.pipelines:
                pipeline.barrier.settle()  # not to hold the retracted items until their punctuation
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
        admit = self.admit
        admitted = self.admitted
        for event in events:
            entry = admit(*event)
            if entry is not None:
                admitted.append(entry)
        if len(admitted) > 1:
            admitted.sort(key=_identity)
        if behind:
            self.punctuations.advance()
            # Final for the first level, whose punctuation is the highest: the later levels take them as they come.
            final = bisect_right(admitted, self.punctuations.times()[0], key=_time)
            admitted, self.admitted = admitted[:final], admitted[final:]
        else:
            self.admitted = []
        for route, item in admitted:
            self._deliver(route, item)
        self.events += len(admitted)

    def _deliver(self, route, item):
        """Apply one admitted event (see `admit` for its route): in the first level's pipeline or, with several
        levels, in those of the levels it is on time at; then end the changelog's step."""
        if self.step is not None:
            self.cause = Cause.of(item)
        corrections = self.corrections
        if corrections is None:
            self.pipelines[0].apply(route, item)
        else:
            source, level = route
            self.applied_by_level[level - 1] += 1
            # Only a later level's own late events can be a correction's cause.
            corrections.applying(Cause.of(item) if level > 1 else None, level)
            for pipeline in self.pipelines[level - 1:]:
                pipeline.apply(source, item)
            corrections.applying(None, 0)
        if self.step is not None:
            self.take_changes()

    def take_changes(self):
        """End the changelog's step: its retractions join the changelog (its items joined as they came)."""
        for sink, tombstone, cause in self.step.take():
            self.changelog.retract(sink, tombstone, cause)

    def punctuate(self):
        """Advance every source's punctuation (which judges its lateness) and issue, level by level, their
        minimum where it rose."""
        collect_if_crowded()
        self.punctuations.advance()
        for level, (pipeline, time) in enumerate(zip(self.pipelines, self.punctuations.times()), 1):
            if time > pipeline.issued:
                self._issue(level, pipeline, time)

    def _issue(self, level: int, pipeline, time):
        """Issue the punctuation `time` in the pipeline of `level`: its outputs, or its corrections."""
        if level == 1:
            self.issued_count += 1
        self.note_buffered()  # items pile up between punctuations: the most is held around one
        pipeline.punctuate(time)
        if pipeline.buffers:
            self.note_buffered()  # and once what the baseline's buffers released has reached the barrier
        if level == 1 and self.step is not None:
            self.take_changes()
        released = pipeline.release(time)
        if not released and self.corrections is None:  # a later level that releases nothing may correct
            return
        now = clock.perf_counter()  # an output is out once the barrier has released it, as on Spark
        if self.corrections is not None:
            self.corrections.released(level, time, released, now)
        if level == 1 and released:
            self._output(released, now, keep=self.corrections is not None)

    def _output(self, released: list, now: float, keep: bool):
        """Add the released items' payloads to the outputs and stamp their latencies. Unless the items are to
        be kept (for the corrections), it empties `released` as it goes, so that an item nothing else holds
        (at +inf, none) is freed while still in the cache."""
        outputs, times, latencies = self.outputs, self.output_times, self.latencies_ms
        if not keep:
            released.reverse()
        for item in released if keep else _popped(released):
            # The payload the operator made, equal to its encoding's decoding; the barrier holds again without
            # payloads the pairs that `settle` took out and had to put back.
            payload = item.payload
            outputs[item.sink].append(unpack(item.data) if payload is None else payload)
            times[item.sink].append(item.meta[0])
            latencies.append((now - item.arrival) * 1000.0)

    def status(self) -> str:
        """The run's progress, for a status line: it reads counters only."""
        return (f"{self.events} event(s) applied, {self.barrier.released} result(s) released, "
                f"{len(self.punctuations.dead_letters)} late")

    def note_buffered(self):
        buffered = sum(pipeline.buffered() for pipeline in self.pipelines)
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
        if self.corrections is not None:
            result.corrections, metrics["levels"] = summarised(
                self.corrections.take(), self.corrections.sinks, self.punctuations.latencies, self.latencies_ms,
                self.applied_by_level)
        return result


def _popped(items: list):
    """The items of `items` from its end, each removed as it is given."""
    while items:
        yield items.pop()


def _identity(entry):
    return entry[1].identity


def _time(entry):
    return entry[1].meta.ts
