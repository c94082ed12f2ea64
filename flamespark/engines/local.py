"""The local engine: in-process, single-threaded and deterministic (when unpaced)."""
import time as clock
from array import array
from contextlib import nullcontext
from itertools import islice

from flamespark.core.batch import Batch
from flamespark.core.codec import unpack
from flamespark.engines.local_pipeline import Pipeline
from flamespark.io.inputs import check_input_names, is_kafka, source_chunks, source_events
from flamespark.io.kafka import topic_events, topic_lanes
from flamespark.result import Result
from flamespark.runtime.changes import BatchChanges, Cause, Changelog
from flamespark.runtime.corrections import Corrections, summarised
from flamespark.runtime.heap import collect_if_crowded, collections_paused
from flamespark.runtime.metrics import run_metrics
from flamespark.runtime.options import BATCH_SIZE, RunOptions
from flamespark.runtime.plan import build_plan
from flamespark.runtime.punctuations import Punctuations
from flamespark.runtime.status_line import status_line

# What a paced run that is behind applies of the events it held back in one batch, while it has time to spare.
HELD_BACK_BATCH = 64


def lane_events(source: str, given):
    """Checked events of one source as `(lane, (ts, payload))`, and `(lane, None)` once a lane ran out. A
    source's lane is the source itself, or for a Kafka topic `(source, partition)`."""
    if is_kafka(given):
        yield from topic_events(source, given)
        return
    for event in source_events(source, given):
        yield source, event
    yield source, None


def unpaced_batches(inputs: dict, size: int):
    """The batches of an unpaced run: `(arrived, ended)` for each `size` events of the inputs in arrival order,
    `arrived` mapping each lane to the times and the payloads of its events in the batch, `ended` naming the
    lanes that ran out after them. A run of one source (not a Kafka topic) reads it a chunk at a time; several
    take turns, one event each (`interleave`)."""
    if len(inputs) == 1 and not is_kafka(next(iter(inputs.values()))):
        (source, given), = inputs.items()
        for times, payloads in source_chunks(source, given, size):
            yield {source: (times, payloads)}, []
        yield {}, [source]
        return
    events = interleave(inputs)
    while arrived := list(islice(events, size)):
        yield lanes_of(arrived)


def lanes_of(events) -> tuple:
    """`(arrived, ended)` of `(lane, event)` pairs, an event a tuple of values (as many in every event) or None
    where its lane ran out: `arrived` maps each lane to its events' values in columns, a list per value, in
    arrival order; `ended` names the lanes that ran out.

    >>> lanes_of([("a", (1, "x")), ("b", (2, "y")), ("a", (3, "z")), ("b", None)])
    ({'a': ([1, 3], ['x', 'z']), 'b': ([2], ['y'])}, ['b'])
    """
    by_lane, ended = {}, []
    for lane, event in events:
        if event is None:
            ended.append(lane)
            continue
        rows = by_lane.get(lane)
        if rows is None:
            rows = by_lane[lane] = []
        rows.append(event)
    # The columns are made at the end, by `zip` in C, not by an append per value in the loop, which runs per event.
    return {lane: tuple(map(list, zip(*rows))) for lane, rows in by_lane.items()}, ended


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
    """One run of a graph over finite inputs, a batch of events at a time.

    Each batch of events is applied at once: every event in it is admitted in arrival
    order (judged late or not against the newest before it in its source),
    the operators take the batch's items at once, and a punctuation follows.
    Unpaced, a batch is the next `batch_size` events. Paced (`rate`
    events/s), the k-th event arrives k / rate s after the start and its
    latency counts from then; a batch is what arrived while the engine
    worked. An engine that keeps up applies each event on arrival. One that
    falls behind finds several events waiting when it turns to them
    (counting those it held back before): it admits them all, advances the
    punctuation, and applies those at or below it, which no late event can
    precede any more. The others it holds back, in meta order, and applies
    them only in time to spare, before the next event is due, or once the
    punctuation reaches them (or the input ends). So under overload it
    applies events as the buffered mode would, in order (what it held back
    replays nothing), while their results are released no later.

    With `changes`, what reaches the sinks is also kept as a changelog, one
    batch at a time: an item and a tombstone of the same output in one batch
    are no change, and the batch's changes leave at its end.

    With several reorder latencies, each level runs a `Pipeline` of its own
    over the events on time at its latency, released at its own
    punctuation: the first level's releases are the outputs, and what each
    later level changes among them are its corrections (`Corrections`).
    """

    def __init__(self, graph, options: RunOptions):
        self.sources = graph.sources
        self.punctuations = Punctuations(self.sources, options.reorder_latency, options.late)
        levels = len(self.punctuations.latencies)
        self.batch_size = options.batch_size or BATCH_SIZE
        self.rate = options.rate
        self.shows_progress = options.shows_progress
        self.plan = build_plan(graph, options.mode, early=options.changes)
        self.changelog = Changelog(self.plan.sinks.values()) if options.changes else None
        self.batch_changes = BatchChanges() if options.changes else None
        self.corrections = Corrections(self.plan.sinks.values(), levels) if levels > 1 else None
        # The buffered mode applies events as its buffers release them: no event's arrival touches outputs.
        names_causes = self.corrections is not None and options.mode == "optimistic"
        self.keeps_causes = options.changes or names_causes  # whether the items carry the events that caused them
        self.pipelines = [Pipeline(self.plan, self._note_change if options.changes else None)]
        self.pipelines += [Pipeline(build_plan(graph, options.mode),
                                    self.corrections.note(level) if names_causes else None)
                           for level in range(2, levels + 1)]
        self.held_back = {}  # route -> the batch of its admitted events held back by a paced turn, in meta order
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

    def _note_change(self, sink, batch):
        """Note in the batch's changes a batch that reached a sink."""
        add = self.batch_changes.add
        for item, cause in zip(batch.items(), batch.row_causes()):
            add(sink, item, cause)

    def run(self, inputs: dict) -> Result:
        check_input_names(self.sources, inputs)
        lanes = {source: topic_lanes(source, given) for source, given in inputs.items() if is_kafka(given)}
        if lanes:  # a topic's partitions are lanes of their own: each judges lateness by its own events
            unlaned = self.punctuations
            self.punctuations = Punctuations(self.sources, unlaned.latencies, unlaned.late, lanes=lanes)
        started = clock.perf_counter()
        with collections_paused(), status_line(self.status) if self.shows_progress else nullcontext():
            if self.rate is None:
                self._run_unpaced(inputs)
            else:
                self._run_paced(interleave(inputs), started)
            self.apply([])  # every source has ended: what still waits is final
            self.punctuate()  # +inf
        return self.result(clock.perf_counter() - started)

    def _run_unpaced(self, inputs):
        for arrived, ended in unpaced_batches(inputs, self.batch_size):
            now = clock.perf_counter()
            self._apply({lane: (times, payloads, [now] * len(times)) for lane, (times, payloads) in arrived.items()},
                        ended)
            self.punctuate()

    def _run_paced(self, events, started):
        interval = 1.0 / self.rate
        waiting = []
        position = 0
        for lane, event in events:
            if event is None:
                waiting.append((lane, None))
                continue
            due = started + position * interval
            position += 1
            if due > clock.perf_counter():
                self._apply_waiting(waiting)
                self._apply_held_back(due)  # in the time to spare until `due`
                delay = due - clock.perf_counter()
                if delay > 0:
                    clock.sleep(delay)
            waiting.append((lane, *event, due))
        self._apply_waiting(waiting)

    def _apply_waiting(self, waiting: list):
        if waiting:
            arrived = sum(1 for event in waiting if event[1] is not None)
            self.apply(waiting, behind=arrived + sum(map(len, self.held_back.values())) > 1)
            waiting.clear()
            self.punctuate()

    def _apply_held_back(self, until: float):
        """Apply in meta order the admitted events a turn behind held back, a few at a time, while the clock is
        before `until`."""
        held_back = self.held_back
        while held_back and clock.perf_counter() < until:
            part = {}
            for route in list(held_back):
                batch = held_back.pop(route)
                part[route] = batch.selected(range(min(HELD_BACK_BATCH, len(batch))))
                if len(batch) > HELD_BACK_BATCH:
                    held_back[route] = batch.selected(range(HELD_BACK_BATCH, len(batch)))
            self._deliver(part)

    def apply(self, events: list, behind: bool = False):
        """Admit `(lane, ts, payload, arrival)` events in arrival order (a lane's end is `(lane, None)`), then apply
        in one batch those that wait, held back before or admitted now: all of them, or when `behind` those at
        or below the punctuation."""
        arrived, ended = lanes_of((event[0], None if event[1] is None else event[1:]) for event in events)
        self._apply(arrived, ended, behind)

    def _apply(self, arrived: dict, ended: list, behind: bool = False):
        """`apply` of the events of `arrived`, `{lane: (times, payloads, arrivals)}`, and the ends of the lanes
        `ended`."""
        admitted = self._admitted(arrived, ended)
        for route, batch in self.held_back.items():
            admitted[route] = Batch.concat([batch, admitted[route]]) if route in admitted else batch
        self.held_back = {}
        if behind:
            self.punctuations.advance()
            # Final for the first level, whose punctuation is the highest: the later levels take them as they come.
            final = self.punctuations.times()[0]
            for route in list(admitted):
                batch = admitted[route].in_meta_order()
                ready = [row for row, meta in enumerate(batch.metas) if meta[0] <= final]
                if len(ready) < len(batch):
                    self.held_back[route] = batch.selected(range(len(ready), len(batch)))
                admitted[route] = batch.selected(ready)
        self._deliver(admitted)

    def _admitted(self, arrived: dict, ended: list) -> dict:
        """The batches of the events `arrived` (`{lane: (times, payloads, arrivals)}`) admitted, by route: the
        source or, with several levels, `(source, level)`, the first level they are on time at. The lanes
        `ended` end, after their events."""
        admitted = {}
        levels = len(self.pipelines)
        for lane, (times, payloads, arrivals) in arrived.items():
            batch, first_levels = self.punctuations.admit(lane, times, payloads, arrivals)
            if not len(batch):
                continue
            if self.keeps_causes:
                batch.causes = list(map(Cause.of_meta, batch.metas))
            source = batch.metas[0][1]
            if first_levels is None:
                _add(admitted, source, batch)
                continue
            for level in range(1, levels + 1):  # an adjusted event is late at every level: of the last
                rows = [row for row, first in enumerate(first_levels) if min(first, levels) == level]
                if rows:
                    _add(admitted, (source, level), batch.selected(rows))
        for lane in ended:
            self.punctuations.end(lane)
        return admitted

    def _deliver(self, admitted: dict):
        """Apply one batch: the admitted events by route (see `_admitted`), each in the first level's pipeline
        or, with several levels, in those of the levels it is on time at; then end the changelog's batch."""
        if not admitted:
            return
        corrections = self.corrections
        if corrections is None:
            self.pipelines[0].apply(admitted)
            self.events += sum(map(len, admitted.values()))
        else:
            by_pipeline = [{} for _ in self.pipelines]
            corrections.begin_batch()
            for (source, level), batch in admitted.items():
                self.applied_by_level[level - 1] += len(batch)
                self.events += len(batch)
                if level > 1:  # only a later level's own late events can be a correction's cause
                    for meta in batch.metas:
                        corrections.arrived(Cause.of_meta(meta), level)
                for batches in by_pipeline[level - 1:]:
                    _add(batches, source, batch)
            for pipeline, batches in zip(self.pipelines, by_pipeline):
                if batches:
                    pipeline.apply(batches)
        if self.batch_changes is not None:
            self.take_changes()

    def take_changes(self):
        """End the changelog's batch: its changes join the changelog."""
        self.changelog.extend(self.batch_changes.take(), clock.perf_counter())

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
        self.note_buffered()  # and once what the operators released has reached the barrier
        if level == 1 and self.batch_changes is not None:
            self.take_changes()
        released = pipeline.release(time)
        if not released and self.corrections is None:  # a later level that releases nothing may correct
            return
        now = clock.perf_counter()  # an output is out once the barrier has released it, as on Spark
        if self.corrections is not None:
            self.corrections.released(level, time, released, now)
        if level == 1 and released:
            self._output(released, now)

    def _output(self, released: list, now: float):
        """Add the released rows' payloads to the outputs and stamp their latencies."""
        outputs, times, latencies = self.outputs, self.output_times, self.latencies_ms
        for meta, sink, data, _, arrival, payload in released:
            # The payload the operator made, equal to its encoding's decoding.
            outputs[sink].append(unpack(data) if payload is None else payload)
            times[sink].append(meta[0])
            latencies.append((now - arrival) * 1000.0)

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


def _add(batches: dict, route, batch):
    """Add `batch` to `batches[route]`, after what is there."""
    batches[route] = Batch.concat([batches[route], batch]) if route in batches else batch
