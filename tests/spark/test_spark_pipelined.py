"""On a real Spark session: `PipelinedMap` reads and writes what a MapState's one-at-a-time calls do, and its
prefixed views the entries under their prefix; apart, the requests and rows it sends are byte for byte what
PySpark's client sends, and it decodes rows as PySpark's client does."""
import json
import pickle
import struct

import pandas as pd
import pytest

from pyspark.serializers import PickleSerializer
from pyspark.sql.streaming import StatefulProcessor
from pyspark.sql.streaming.proto import StateMessage_pb2 as messages
from pyspark.sql.streaming.stateful_processor_api_client import StatefulProcessorApiClient
from pyspark.sql.types import BinaryType, StructField, StructType

from flamespark.core.errors import InternalError
from flamespark.engines.spark.processors import pipelined, state_messages
from flamespark.engines.spark.processors.pipelined import PipelinedMap

# More keys than a chunk holds requests, and values that fill a chunk's bytes sooner.
KEYS = pipelined.CHUNK_REQUESTS * 2 + 7
BIG = b"v" * (pipelined.CHUNK_BYTES // 50)


def key(i: int) -> tuple:
    return (b"key-%05d" % i,)


class Compare(StatefulProcessor):
    """Writes and reads one map state both ways in its one batch, and reports what each way saw."""

    def init(self, handle):
        self.state = handle.getMapState("m", "key BINARY", "value BINARY")
        self.pipelined = PipelinedMap(self.state)

    def handleInputRows(self, grouping_key, rows, timerValues):
        for _ in rows:
            pass
        self.pipelined.write([(key(i), (BIG if i % 3 == 0 else b"%d" % i,)) for i in range(0, KEYS, 2)], [])
        self.state.updateValue(key(1), (b"one",))
        self.pipelined.write([(key(3), (b"three",))], [key(0), key(2)])
        wanted = [key(i) for i in range(KEYS + 3)]  # the last three never written
        one_by_one = [self.state.getValue(k) for k in wanted]
        many = self.pipelined.get_many(wanted)
        view = self.pipelined.prefixed(b"p:")
        view.updateValue(key(5), (b"five",))
        under_prefix = self.state.getValue((b"p:" + key(5)[0],))
        through_view = view.getValue(key(5))
        view.removeKey(key(5))
        seen = {"one_by_one": [None if row is None else row[0].decode() for row in one_by_one],
                "many": [None if row is None else row[0].decode() for row in many],
                "view": [under_prefix[0].decode(), through_view[0].decode(), view.getValue(key(5))],
                "timed": self.pipelined.stopwatch.seconds > 0 and view.stopwatch is self.pipelined.stopwatch}
        yield pd.DataFrame({"seen": [json.dumps(seen)]})

    def close(self):
        pass


def test_pipelined_reads_and_writes_equal_one_call_at_a_time(spark, tmp_path):
    pd.DataFrame({"g": [0]}).to_json(tmp_path / "in.json", orient="records", lines=True)
    query = (
        spark.readStream.schema("g LONG").json(str(tmp_path))
        .groupBy("g").transformWithStateInPandas(Compare(), outputStructType="seen STRING", outputMode="Append",
                                                 timeMode="None")
        .writeStream.format("memory").queryName("pipelined_map")
        .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start()
    )
    query.awaitTermination(300)
    (row,) = spark.sql("select seen from pipelined_map").collect()
    seen = json.loads(row.seen)
    expected = [None, "one", None, "three"] + [
        (BIG.decode() if i % 3 == 0 else str(i)) if i % 2 == 0 and i < KEYS else None for i in range(4, KEYS + 3)
    ]
    assert seen["one_by_one"] == expected
    assert seen["many"] == expected
    assert seen["view"] == ["five", "five", None]  # a prefixed view's entries, one key at a time
    assert seen["timed"] is True


def test_a_map_state_without_the_client_it_needs_is_refused():
    with pytest.raises(InternalError, match="lacks what FlameSpark's pipelined state calls use"):
        PipelinedMap(object())


# Lengths on both sides of each varint size (one, two and three bytes); an encoded row is never empty.
SIZES = [1, 127, 128, 300, 16383, 16384, 70_000]


def _protobuf(call: str, key: bytes, value: bytes | None = None) -> bytes:
    arguments = {"userKey": key} if value is None else {"userKey": key, "value": value}
    argument_message = {"getValue": messages.GetValue, "updateValue": messages.UpdateValue,
                        "removeKey": messages.RemoveKey}[call](**arguments)
    return messages.StateRequest(stateVariableRequest=messages.StateVariableRequest(
        mapStateCall=messages.MapStateCall(stateName="state", **{call: argument_message}))).SerializeToString()


@pytest.mark.parametrize("size", SIZES)
def test_requests_are_encoded_as_protobuf_encodes_them(size):
    key, value = b"k" * size, b"v" * (size + 1)
    assert state_messages.map_state_request(b"state", state_messages.GET_VALUE, key) == _protobuf("getValue", key)
    assert state_messages.map_state_request(b"state", state_messages.REMOVE_KEY, key) == _protobuf("removeKey", key)
    assert (state_messages.map_state_request(b"state", state_messages.UPDATE_VALUE, key, value)
            == _protobuf("updateValue", key, value))


class _Client:
    """What PySpark's client reads of itself to encode and decode rows."""

    pickleSer = PickleSerializer()


@pytest.mark.parametrize("size", SIZES)
def test_rows_are_encoded_and_decoded_as_pyspark_s_client_does(size):
    schema = StructType([StructField("value", BinaryType())])
    row = (b"x" * size,)
    assert state_messages.encode_row(row) == StatefulProcessorApiClient._serialize_to_bytes(_Client(), schema, row)
    # A row as the JVM pickles it: its schema from JSON, a converter for it, the converter applied to the values.
    schema_json = schema.json().encode()
    jvm_pickle = (b"\x80\x02cpyspark.sql.types\n_create_row_inbound_converter\n"
                  b"cpyspark.sql.types\n_parse_datatype_json_string\n"
                  + b"X" + struct.pack("<I", len(schema_json)) + schema_json + b"\x85R\x85R"
                  + b"B" + struct.pack("<I", size) + row[0] + b"\x85R.")
    as_pyspark_decodes = StatefulProcessorApiClient._deserialize_from_bytes(_Client(), jvm_pickle)
    assert state_messages.decode_row(jvm_pickle) == tuple(as_pyspark_decodes) == row
    assert state_messages.decode_row(pickle.dumps(row)) == row  # a plain tuple as it is
