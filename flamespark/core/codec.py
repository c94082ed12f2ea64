"""Payload encoding: msgpack with tuples preserved.

Payloads travel (and are compared) as msgpack bytes. Tuples are encoded as an
extension type so that a tuple produced by `group_by` decodes as a tuple again,
on every engine.
"""
import msgpack

_TUPLE = 1


def _default(obj):
    if isinstance(obj, tuple):
        # A packer of its own: this runs while `_packer` is in the middle of the enclosing payload.
        return msgpack.ExtType(_TUPLE, msgpack.packb(list(obj), default=_default, strict_types=True, use_bin_type=True))
    raise TypeError(f"cannot encode object of type {type(obj).__name__}: {obj!r}")


# One packer for every call: making one per call costs more than encoding most payloads.
_packer = msgpack.Packer(default=_default, strict_types=True, use_bin_type=True)


def _ext_hook(code, data):
    if code == _TUPLE:
        return tuple(unpack(data))
    return msgpack.ExtType(code, data)


# `pack(payload) -> bytes` encodes a payload, raising TypeError if msgpack cannot. It is the packer's own
# method, not a function around it: every item and state is encoded, and a wrapper adds a Python call to each.
pack = _packer.pack


def unpack(data: bytes):
    """Decode bytes made by `pack`."""
    return msgpack.unpackb(data, ext_hook=_ext_hook, raw=False, strict_map_key=False)


def _array_header(length: int) -> bytes:
    if length < 16:
        return bytes((0x90 | length,))
    if length < 1 << 16:
        return b"\xdc" + length.to_bytes(2, "big")
    return b"\xdd" + length.to_bytes(4, "big")


def pack_encoded_tuple(parts: list) -> bytes:
    """`pack(tuple(...))` built from the parts' encodings, without re-encoding them."""
    return msgpack.packb(msgpack.ExtType(_TUPLE, _array_header(len(parts)) + b"".join(parts)))
