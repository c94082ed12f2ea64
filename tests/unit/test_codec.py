"""The payload codec on its own: what `pack` encodes, `unpack` gives back as it was, tuples as tuples."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flamespark.core.codec import pack, pack_encoded_tuple, unpack

SCALARS = (st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.floats(allow_nan=False) | st.text()
           | st.binary())
PAYLOADS = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
                        | st.lists(inner, max_size=3).map(tuple)
                        | st.dictionaries(st.text(max_size=5) | st.integers(-5, 5), inner, max_size=3), max_leaves=20)


def shape(value):
    """`value` with every container's and scalar's type spelled out, so that equal shapes mean equal types too
    (1 == True and [1] == (1,) compare otherwise)."""
    if isinstance(value, (list, tuple)):
        return type(value).__name__, [shape(part) for part in value]
    if isinstance(value, dict):
        return "dict", sorted(((shape(key), shape(part)) for key, part in value.items()), key=repr)
    return type(value).__name__, value


@pytest.mark.slow  # 300 examples
@settings(max_examples=300, deadline=None)
@given(PAYLOADS)
def test_unpack_gives_back_what_pack_encoded(payload):
    assert shape(unpack(pack(payload))) == shape(payload)


@settings(max_examples=100, deadline=None)
@given(st.lists(PAYLOADS, max_size=20))
def test_a_tuple_built_from_its_parts_encodings_is_the_tuple_encoded(parts):
    assert pack_encoded_tuple([pack(part) for part in parts]) == pack(tuple(parts))


@pytest.mark.parametrize("value", [{1, 2}, object(), 2**64])
def test_what_msgpack_cannot_hold_is_refused(value):
    with pytest.raises((TypeError, OverflowError)):
        pack(value)
