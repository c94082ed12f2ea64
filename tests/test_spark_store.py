"""The Spark engine's keyed state, one shard's blob per batch, without a Spark session."""
import math

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")

from flamespark.core.codec import pack  # noqa: E402
from flamespark.core.items import Item  # noqa: E402
from flamespark.engines.spark.processors.keyed import StageState  # noqa: E402
from operators import StatefulLoop  # noqa: E402
from tests.graphs import running_sum_update  # noqa: E402
from tests.test_store import OPERATORS, item, keyed_steps, run  # noqa: E402


def loop():
    return StatefulLoop("sum", key=lambda v: v % 3, update=running_sum_update)


@settings(max_examples=100, deadline=None)
@given(case=keyed_steps(), cuts=st.sets(st.integers(1, 60), max_size=6), which=st.sampled_from(range(len(OPERATORS))))
def test_batches_over_the_shard_blob_give_the_outputs_of_one_in_memory_run(case, cuts, which):
    steps, _ = case
    operator = OPERATORS[which][0]()
    expected = run(operator, operator.new_state(), steps)
    blob, horizon, out = msgpack.packb({}), -math.inf, []
    bounds = [0, *sorted(c for c in cuts if c < len(steps)), len(steps)]
    for start, end in zip(bounds, bounds[1:]):
        stage = StageState({operator.name: operator}, msgpack.unpackb(blob, strict_map_key=False))
        batch = steps[start:end]
        out += run(operator, stage.states[operator.name], batch)
        blob = msgpack.packb(stage.save())
        horizon = max([horizon, *(step for step in batch if not isinstance(step, Item))])
    assert out == expected


def test_only_the_buckets_a_batch_changes_are_encoded_again():
    operator = loop()
    stored = {}
    batches = [[item(1, 1), item(2, 2)], [item(4, 4)], [math.inf]]
    blobs = []
    for batch in batches:
        stage = StageState({"sum": operator}, stored)
        run(operator, stage.states["sum"], batch)
        stage.save()
        blobs.append(dict(stored["sum"]))
    first, second, third = blobs
    assert second[pack(2)] is first[pack(2)] and second[pack(1)] != first[pack(1)]
    assert third == second  # a punctuation alone decodes and writes nothing
