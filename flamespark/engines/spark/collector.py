"""The driver side of a Spark run: per-batch output files, progress, and the final Result."""
import statistics
import sys
import time
from collections import namedtuple
from datetime import datetime
from operator import itemgetter
from pathlib import Path

import msgpack

from flamespark.core.codec import unpack
from flamespark.core.items import Item, Meta
from flamespark.engines.spark.batch_corrections import BatchCorrections, records_and_summary, stored
from flamespark.engines.spark.batch_time import batch_time
from flamespark.engines.spark.processors.blob import HANDLER
from flamespark.engines.spark.rows import CHANGE, COLUMNS, LATE, METRIC, OUT, bundle_records
from flamespark.io.atomic import write_atomic
from flamespark.io.sinks import write_sink, write_values
from flamespark.result import Result
from flamespark.runtime.changes import Cause, Change, Changelog, records
from flamespark.runtime.metrics import percentiles, run_metrics


class BatchCollector:
    """`foreachBatch` sink: writes each micro-batch's releases to `parts/batch-<id>.msgpack`.

    With `output`, the batch's releases also go to `output/<sink>/batch-<id>.<format>`
    and its dead letters to `output/late/batch-<id>.jsonl`, and its changelog (if
    kept) to `output/<sink>.changes/batch-<id>.jsonl`, as soon as the batch ends.
    A batch replayed after a restart rewrites the same files, so outputs are
    neither lost nor duplicated. Every file is written atomically.
    The sinks of `kafka_writers` (`{sink: io.kafka_sink.KafkaSinkWriter}`)
    go to their Kafka topics instead, batch by batch, exactly once, whether
    or not there is an `output`.

    With several reorder latencies (`levels`, a `spark.levels.Levels`), the
    first level's releases are the batch's outputs, and its changelog the
    first level's; the batch file keeps what the corrections need
    (`batch_corrections`), and the batch's corrections go to
    `output/<sink>.corrections/batch-<id>.jsonl`.
    """

    def __init__(self, directory, sinks, progress: bool = False, output=None, output_format="jsonl",
                 kafka_writers: dict | None = None, levels=None):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.sinks = sinks
        self.levels = levels
        self.corrections = None if levels is None else BatchCorrections(levels, self.parts)
        self.kafka_writers = kafka_writers or {}
        self.progress = progress
        self.output = None if output is None else Path(output)
        self.output_format = output_format
        parts = self.parts() if progress else []
        self.latest = _latest_metrics(parts)
        self.events = _ingest_counts(parts)["events"]

    def __call__(self, frame, batch_id):
        rows = _rows(frame)
        released_at = time.time()
        outputs = _records(rows, OUT)
        outputs.sort(key=itemgetter(1, 2))  # meta, then data
        changes = _records(rows, CHANGE)
        changes.sort(key=_change_order)
        metrics = [[r.target, r.shard, r.payload] for r in rows if r.kind == METRIC]
        levelled = None
        if self.corrections is not None:
            levelled = self.corrections.step(batch_id, outputs, _payloads(metrics, "ingest"),
                                             _payloads(metrics, "barrier"), released_at)
            outputs, changes = self._first_level(outputs), self._first_level(changes)
        part = {
            "batch": batch_id,
            "released_at": released_at,
            "outputs": [[sink, data, arrival] for sink, _, data, _, arrival, _ in outputs],
            "changes": changes,  # records as bundled: [sink, meta, data, weight, arrival, cause]
            "late": [r.payload for r in rows if r.kind == LATE],
            "metrics": metrics,
        }
        if levelled is not None:
            part["levelled"] = levelled
        if self.kafka_writers:
            self._write_kafka(batch_id, outputs, part)
        if self.output is not None:
            self._write_output(part)
        write_atomic(self.directory / f"batch-{batch_id:08d}.msgpack", msgpack.packb(part))
        if self.progress:
            self._show(part)

    def _first_level(self, records: list) -> list:
        """The bundled records of the first level's sinks, under their user's sink names."""
        levels = self.levels
        return [(levels.sink_of(sink), *rest) for sink, *rest in records if levels.level_of(sink) == 1]

    def _write_kafka(self, batch_id: int, outputs: list, part):
        """Each Kafka sink's outputs of the batch, with their event times, and its changelog records, in one
        transaction per sink (which a replay of the batch skips)."""
        changes = records(batch_changes(part), self.sinks) if part["changes"] else {}
        for sink, writer in self.kafka_writers.items():
            released = [(unpack(data), meta[0]) for target, meta, data, *_ in outputs if target == sink]
            writer.write(batch_id, released, changes.get(sink, ()))

    def _write_output(self, part):
        name = f"batch-{part['batch']:08d}"
        for sink in self.sinks:
            if sink in self.kafka_writers:
                continue
            values = [unpack(data) for target, data, _ in part["outputs"] if target == sink]
            problem = write_sink(self.output / sink / name, values, self.output_format) if values else None
            if problem:
                sys.stderr.write(f"\nflamespark: batch {part['batch']} of sink {sink!r}: {problem}\n")
        if part["late"]:
            write_values(self.output / "late" / name, [unpack(data) for data in part["late"]], "jsonl")
        for sink, changes in records(batch_changes(part), self.sinks).items():
            if changes:
                write_values(self.output / f"{sink}.changes" / name, changes, "jsonl")
        if "levelled" in part:
            corrections = stored(part["levelled"])
            for sink in self.sinks:
                of_sink = [record for target, record, _ in corrections if target == sink]
                if of_sink:
                    write_values(self.output / f"{sink}.corrections" / name, of_sink, "jsonl")

    def _show(self, part):
        """One status line, rewritten in place, from the batches' counters (they survive restarts)."""
        self.latest.update(_latest_metrics([part]))
        self.events += _ingest_counts([part])["events"]
        released = sum(m["released"] for m in self.latest.values() if m["level"] == 1)
        held = sum(m["held"] for m in self.latest.values())
        sys.stderr.write(
            f"\rbatch {part['batch']}: {self.events} event(s) in, {released} released, up to {held} held at the barrier   "
        )
        sys.stderr.flush()

    def parts(self) -> list:
        return [msgpack.unpackb(p.read_bytes()) for p in sorted(self.directory.glob("batch-*.msgpack"))]


def _latest_metrics(parts) -> dict:
    """The last metric row of every part of the barrier, by stage, shard and level; their counters are
    cumulative."""
    latest = {}
    for part in parts:
        for kind, shard, payload in part["metrics"]:
            if kind == "barrier":
                values = msgpack.unpackb(payload)
                latest[(values["stage"], shard, values["level"])] = values
    return latest


def _payloads(metrics: list, kind: str) -> list:
    """The decoded payloads of a batch's metric rows of `kind`."""
    return [msgpack.unpackb(payload) for target, _, payload in metrics if target == kind]


def _ingest_counts(parts) -> dict:
    """Events admitted, dropped and adjusted as late, summed over the ingest rows of `parts` (each counts
    its own batch)."""
    totals = {"events": 0, "late_dropped": 0, "late_adjusted": 0}
    for part in parts:
        for stage, _, payload in part["metrics"]:
            if stage == "ingest":
                values = msgpack.unpackb(payload)
                for key in totals:
                    totals[key] += values[key]
    return totals


def _held_back(part) -> tuple:
    """Whether the batch file `part` was behind its input, what its stages held back in it, and what they had
    held back at its end (see `processors.held_back`)."""
    behind = any(msgpack.unpackb(payload).get("behind", False) for stage, _, payload in part["metrics"]
                 if stage == "ingest")
    held_back = waiting = 0
    for stage, _, payload in part["metrics"]:
        if stage == "held_back":
            values = msgpack.unpackb(payload)
            held_back += values["held_back"]
            waiting += values["waiting"]
    return behind, held_back, waiting


def regime(parts) -> dict:
    """How many of the batches were behind their input, the items the stages held back in them (an item
    counts once for every batch that holds it back anew), and the most they held back at a batch's end.

    >>> ingest = msgpack.packb({"events": 4, "late_dropped": 0, "late_adjusted": 0, "behind": True})
    >>> held = msgpack.packb({"stage": 1, "behind": True, "held_back": 30, "waiting": 25})
    >>> regime([{"metrics": [["ingest", 0, ingest], ["held_back", 0, held], ["held_back", 1, held]]},
    ...         {"metrics": []}])
    {'batches_behind': 1, 'held_back': 60, 'peak_held_back': 50}
    """
    batches = [_held_back(part) for part in parts]
    return {"batches_behind": sum(behind for behind, _, _ in batches),
            "held_back": sum(held_back for _, held_back, _ in batches),
            "peak_held_back": max((waiting for _, _, waiting in batches), default=0)}


def _handler_times(parts) -> dict:
    """`{batch: {stage name: {"ms", "state_ms"}}}`: what each batch's handlers of a stage took, summed over its
    tasks, from their metric rows (`blob.handler`)."""
    times = {}
    for part in parts:
        stages = times[part["batch"]] = {}
        for target, _, payload in part["metrics"]:
            if target == HANDLER:
                took = msgpack.unpackb(payload)
                total = stages.setdefault(took["stage"], {"ms": 0.0, "state_ms": 0.0})
                total["ms"] += took["ms"]
                total["state_ms"] += took["state_ms"]
    return times


def _batch_starts(progress) -> list:
    starts = []
    for entry in progress:
        stamp = entry.get("timestamp")
        if stamp is not None:
            starts.append((entry["batchId"], datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()))
    return sorted(starts)


def batch_durations_ms(progress) -> list:
    """How long each micro-batch of the latest run took, start to end, by Spark's progress reports."""
    durations = (entry.get("durationMs", {}) for entry in progress)
    return [duration["triggerExecution"] for duration in durations if "triggerExecution" in duration]


def batch_duration_thirds_ms(durations: list) -> list | None:
    """The median duration of the first, middle and last third of the micro-batches after the first (which
    starts the query): whether a batch costs more as the run goes on. None with fewer than four batches.

    >>> batch_duration_thirds_ms([2600, 450, 470, 800, 820, 1100, 1200])
    [460.0, 810.0, 1150.0]
    """
    later = durations[1:]
    third = len(later) // 3
    if not third:
        return None
    return [statistics.median(part) for part in (later[:third], later[third:-third], later[-third:])]


def after_first_batch(parts, progress) -> dict | None:
    """Events ingested after this run's first micro-batch, and the events/s from the start of its second to the
    last release: a paced run's rate once Spark has started its Python workers and state stores (which the
    first batch does, carrying one event per source). None with fewer than two batches.
    """
    starts = _batch_starts(progress)
    if len(starts) < 2:
        return None
    (first, _), (_, second_start) = starts[0], starts[1]
    later = [part for part in parts if part["batch"] > first]
    events = _ingest_counts(later)["events"]
    span = max(part["released_at"] for part in later) - second_start
    return {"events": events, "wall_s": span, "events_per_s": events / span if span > 0 else None}


def timeline(parts, progress, handlers: dict) -> list:
    """Each micro-batch of the latest run, in order: when it started (`start_s`, after the first's start), how
    long it took, the events it ingested, the outputs it released, what the barrier held at its release (the
    released items included), whether it was behind its input and what its stages held back at its end (see
    `processors.held_back`), and our handlers' time in it per stage (from `handlers`, `_handler_times` of
    `parts`: summed over the stage's tasks): where a paced run falls behind its input.

    >>> progress = [{"batchId": 3, "timestamp": "2026-11-28T10:00:01.5Z", "durationMs": {"triggerExecution": 700}}]
    >>> ingest = msgpack.packb({"events": 4, "late_dropped": 0, "late_adjusted": 0})
    >>> barrier = msgpack.packb({"held": 9})
    >>> took = msgpack.packb({"stage": "1: count", "ms": 120.0, "state_ms": 30.0})
    >>> parts = [{"batch": 3, "outputs": [["sums", b"", 0.0]],
    ...           "metrics": [["ingest", 0, ingest], ["barrier", 0, barrier], [HANDLER, 0, took]]}]
    >>> batch = timeline(parts, progress, _handler_times(parts))[0]
    >>> batch["batch"], batch["start_s"], batch["duration_ms"], batch["events"], batch["released"], batch["held"]
    (3, 0.0, 700, 4, 1, 9)
    >>> batch["handler_ms"], batch["behind"], batch["held_back"]
    ({'1: count': 120.0}, False, 0)
    """
    starts = dict(_batch_starts(progress))
    durations = {entry["batchId"]: entry["durationMs"]["triggerExecution"] for entry in progress
                 if "triggerExecution" in entry.get("durationMs", {})}
    first = min(starts.values(), default=0.0)
    batches = []
    for part in parts:
        if part["batch"] not in starts:
            continue
        behind, _, held_back = _held_back(part)
        batches.append({
            "batch": part["batch"], "start_s": starts[part["batch"]] - first, "duration_ms": durations.get(part["batch"]),
            "events": _ingest_counts([part])["events"], "released": len(part["outputs"]), "held": _held(part),
            "behind": behind, "held_back": held_back,
            "handler_ms": {stage: took["ms"] for stage, took in handlers[part["batch"]].items()},
        })
    return batches


def _held(part) -> int:
    """What every part of the barrier held in the batch `part` when it released."""
    return sum(msgpack.unpackb(payload)["held"] for stage, _, payload in part["metrics"] if stage == "barrier")


def _first_batch_s(durations: list):
    return durations[0] / 1000 if durations else None


def release_delays(parts, progress, paced: bool) -> list:
    """For each output, micro-batches from the one that read its completing event to its release.

    A paced event's arrival is when it became due, so the first batch that
    starts after it reads it. An unpaced one arrives when a batch reads it,
    after the previous batch wrote its file and before its own: the first
    batch written at or after the arrival read it. Batch files outlive a
    restart, whereas `progress` lists only the batches of the latest run.
    """
    starts = _batch_starts(progress)
    written = [(part["batch"], part["released_at"]) for part in parts]
    delays = []
    for part in parts:
        for _, _, arrival in part["outputs"]:
            if paced:
                arrived_in = next((batch for batch, start in starts if start >= arrival), part["batch"])
            else:
                arrived_in = next((batch for batch, at in written if at >= arrival), part["batch"])
            delays.append(part["batch"] - min(arrived_in, part["batch"]))
    return delays


def batch_changes(part) -> list:
    """The changes of one batch file, in their order."""
    changes = []
    for sink, meta, data, weight, arrival, cause in part["changes"]:
        item = Item(Meta.load(meta), None, data, weight < 0, arrival)
        changes.append(Change(sink, item, Cause(*cause) if cause else None))
    return changes


def _records(rows, kind: str) -> list:
    """The records of the batch's bundle rows of `kind` (see rows.bundle_records)."""
    return [record for row in rows if row.kind == kind for record in bundle_records(row.payload)]


def _change_order(record) -> tuple:
    """A batch is one step of the changelog: its additions, then its retractions, each in meta order."""
    return record[3] < 0, record[1], record[2]


_Row = namedtuple("_Row", COLUMNS)


def _rows(frame) -> list:
    """The batch's rows, fetched as Arrow columns: far cheaper than `collect()`, which pickles a Row each."""
    table = frame.select(*COLUMNS).toArrow()
    return [_Row._make(values) for values in zip(*(table.column(name).to_pylist() for name in COLUMNS))]


def assemble(parts, sinks, progress, wall_s, paced=False, changes=False, stage_names=(), levels=None) -> Result:
    """The run's Result from its batch files; metrics["engine"] has the micro-batches, their durations (of this
    run's batches), where their time went (`batch_time`, per stage in `stage_names`), each batch of this run
    (`timeline`) and the release delays.

    With `changes`, it has the changelog too, each change stamped with when its batch ended; with several
    reorder latencies (`levels`), the corrections and metrics["levels"]. The barrier's counters are the
    first level's, what it held every level's.
    """
    outputs = {sink: [] for sink in sinks}
    latencies = []
    for part in parts:
        for sink, data, arrival in part["outputs"]:
            outputs[sink].append(unpack(data))
            latencies.append((part["released_at"] - arrival) * 1000.0)
    late = [unpack(payload) for part in parts for payload in part["late"]]
    barrier = [values for values in _latest_metrics(parts).values() if values["level"] == 1]
    ingest = _ingest_counts(parts)
    held_per_batch = [_held(part) for part in parts]
    handlers = _handler_times(parts)
    delays = release_delays(parts, progress, paced)
    durations = batch_durations_ms(progress)
    metrics = run_metrics(
        events=ingest["events"],
        arrived=sum(m["arrived"] for m in barrier),
        tombstones=sum(m["tombstones"] for m in barrier),
        released=sum(m["released"] for m in barrier),
        late_dropped=ingest["late_dropped"],
        late_adjusted=ingest["late_adjusted"],
        peak_buffered=max(held_per_batch, default=0),
        wall_s=wall_s,
        latencies_ms=latencies,
        rounds=len(parts),
        engine={
            "name": "spark",
            "batches": len(parts),
            "batch_duration_ms": percentiles(durations),
            "batch_duration_thirds_ms": batch_duration_thirds_ms(durations),
            "first_batch_s": _first_batch_s(durations),
            "after_first_batch": after_first_batch(parts, progress) if paced else None,
            "batch_time": batch_time(progress, list(stage_names), handlers),
            "timeline": timeline(parts, progress, handlers),
            "regime": regime(parts),
            "release_delay_batches": {
                "mean": sum(delays) / len(delays) if delays else None,
                "max": max(delays, default=None),
                "histogram": {str(d): delays.count(d) for d in sorted(set(delays))},
            },
        },
    )
    result = Result(outputs, late, metrics, latencies)
    if levels is not None:
        result.corrections, metrics["levels"] = records_and_summary(parts, levels, latencies)
    if changes:
        changelog = Changelog(sinks)
        for part in parts:
            changelog.extend(batch_changes(part), part["released_at"])
        changelog.fill(result)
    return result
