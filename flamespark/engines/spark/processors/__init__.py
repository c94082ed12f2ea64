"""The keyed Spark operators: ingest, and stages of boundary operators, each that makes sink items with its part of
the barrier; and `ReplayIngest`, which ingests a replayed source in the tasks that read it, with no state.

Each is a `StatefulProcessor` for `transformWithStateInPandas` that keeps
all of a grouping key's state (a source's, or a shard's) in one map state
(`blob`): a small msgpack value under the key `v`, and under key prefixes
of their own, read and written as far as a batch touches them, keyed
operators' buckets (`b`), fixed windows by end (`e`), session windows' keys
due by end (`d`), the barrier's held items (`h`, `h2`, ...: a reorder
latency each), the optimistic mode's held-back rows (`w`) and the
baseline's buffers (`u`, `u2`, ...). It runs the core's operator objects on
the batches of one micro-batch. Punctuation rows travel with the data:
every stage receives them on every shard, applies them after the batch's
items, and shard 0 passes them on to every shard of the next stage. The
barrier is split by stage: each stage holds the sink items its operators
make (the last also those from the sources) and releases them in the same
micro-batch.

Modules: `blob` (the map state, the small value and control rows), `buckets` (keyed
operators' state), `pipelined` (a map state's reads and writes of many keys
in few round trips) and `state_messages` (their encoding), `held` (barrier
and buffers' held items), `held_back` (what a batch behind its input sets
aside), `ingest` (both ways), `stage_run` (a stage's operators and barrier
on a shard's batches, and what both modes' stages share), `stage`
(optimistic), `buffered` (the baseline).
"""
from flamespark.engines.spark.processors.buckets import LAYOUT as BUCKET_LAYOUT
from flamespark.engines.spark.processors.buffered import LAYOUT as BUFFER_LAYOUT
from flamespark.engines.spark.processors.buffered import BufferedStageProcessor
from flamespark.engines.spark.processors.ingest import IngestProcessor, ReplayIngest
from flamespark.engines.spark.processors.stage import StageProcessor

# The layout a checkpoint's claim records, so that a checkpoint written with another one is refused.
STATE_LAYOUT = (f"tie-breaks CRC-32 then Adler-32; one map state per group, its value under key v (the operators' "
                f"index under states); buckets: {BUCKET_LAYOUT}; held and buffered "
                f"chunks under prefixes h and u, held back under w; buffers: {BUFFER_LAYOUT}; ingest: positions, "
                f"counts per batch; the barrier in every stage that makes sink items, a part per reorder latency "
                f"(held under h, h2, ...)")

__all__ = ["STATE_LAYOUT", "BufferedStageProcessor", "IngestProcessor", "ReplayIngest", "StageProcessor"]
