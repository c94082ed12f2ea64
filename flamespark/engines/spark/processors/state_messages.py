"""The state server's requests and rows for map state calls, encoded and decoded in a few byte operations.

PySpark's client builds protobuf message objects for each call, and decodes
each value row the JVM sends by parsing the row's schema from JSON and
making a `Row`; for the many calls of a batch, `pipelined.PipelinedMap`
encodes the same bytes here and decodes a row as the tuple of its values: 8
µs of Python to read a key and write it back, against 24 µs through PySpark's
client (a 300-byte value, measured apart on this machine).
`tests/spark/test_spark_pipelined.py` holds both to PySpark's own encoding.
"""
import io
import pickle

from pyspark.serializers import pickle_protocol

# Field numbers of the state server's protobuf messages (StateMessage.proto) that a map state call takes.
_STATE_VARIABLE_REQUEST = 3  # StateRequest
_MAP_STATE_CALL = 3  # StateVariableRequest
_STATE_NAME, GET_VALUE, UPDATE_VALUE, REMOVE_KEY = 1, 3, 5, 9  # MapStateCall
_USER_KEY, _VALUE = 1, 2  # GetValue, UpdateValue, RemoveKey

_ONE_BYTE = [bytes((number,)) for number in range(0x80)]  # the varints of one byte, made once


def _varint(number: int) -> bytes:
    if number < 0x80:
        return _ONE_BYTE[number]
    if number < 0x4000:  # two bytes: most values' lengths
        return bytes((number & 0x7F | 0x80, number >> 7))
    out = bytearray()
    while number > 0x7F:
        out.append(number & 0x7F | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def _tag(number: int) -> bytes:
    """The tag of a length-delimited protobuf field (a message, string or bytes)."""
    return _varint(number << 3 | 2)


def _field(tag: bytes, payload: bytes) -> bytes:
    return tag + _varint(len(payload)) + payload


_STATE_VARIABLE_REQUEST_TAG, _MAP_STATE_CALL_TAG = _tag(_STATE_VARIABLE_REQUEST), _tag(_MAP_STATE_CALL)
_STATE_NAME_TAG, _USER_KEY_TAG, _VALUE_TAG = _tag(_STATE_NAME), _tag(_USER_KEY), _tag(_VALUE)
_CALL_TAGS = {call: _tag(call) for call in (GET_VALUE, UPDATE_VALUE, REMOVE_KEY)}


def map_state_request(state_name: bytes, call: int, user_key: bytes, value: bytes | None = None) -> bytes:
    """The serialized StateRequest of map state call `call` (GET_VALUE, UPDATE_VALUE or REMOVE_KEY) on `user_key`
    of the map state named `state_name` (UTF-8), with `value` for an update, as protobuf serializes it (the key
    and value are encoded rows, never empty, which protobuf would leave out).

    >>> map_state_request(b"state", GET_VALUE, b"k").hex()
    '1a0e1a0c0a0573746174651a030a016b'
    """
    arguments = _field(_USER_KEY_TAG, user_key)
    if value is not None:
        arguments += _field(_VALUE_TAG, value)
    call_message = _field(_STATE_NAME_TAG, state_name) + _field(_CALL_TAGS[call], arguments)
    return _field(_STATE_VARIABLE_REQUEST_TAG, _field(_MAP_STATE_CALL_TAG, call_message))


def encode_row(values: tuple) -> bytes:
    """A state row of bytes columns as the state server reads it: the tuple pickled, as PySpark's client does
    once it has checked and converted its columns (bytes need neither)."""
    return pickle.dumps(values, pickle_protocol)


def _row_values(*values) -> tuple:
    return values


def _row_maker(schema):
    return _row_values


def _no_schema(schema_json):
    return None


class _RowUnpickler(pickle.Unpickler):
    """Unpickles a row the JVM pickled (its schema as JSON, then its values) as the tuple of its values."""

    def find_class(self, module, name):
        if module == "pyspark.sql.types":
            if name == "_parse_datatype_json_string":
                return _no_schema
            if name == "_create_row_inbound_converter":
                return _row_maker
        return super().find_class(module, name)


def decode_row(data: bytes) -> tuple:
    """The values of a row that the state server sent (columns of bytes), as a tuple."""
    return _RowUnpickler(io.BytesIO(data), encoding="bytes").load()
