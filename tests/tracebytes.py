# SPDX-License-Identifier: MIT
"""Trace bytes written by hand, for the tests that craft traces the shim
would never write, and read back by the benchmarks that count them
(docs/formats.md describes the format):

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from tracebytes import MAGIC, HEADER_SIZE, varint, ext, header, end
"""
import struct

MAGIC = b"\x89LWTRACE"
HEADER_SIZE = 32
REC_END = 0x46


def varint(v):
    """v as a LEB128 varint."""
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7f) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def read_varint(data, i):
    """The LEB128 varint at data[i]: (its value, the index after it)."""
    value = shift = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7f) << shift
        shift += 7
        if b < 0x80:
            return value, i


def ext(tag, payload):
    """An extended record: its tag, its payload's length, the payload."""
    return bytes([tag]) + varint(len(payload)) + payload


def header(pid=4242):
    """A version 1 header of a trace of process pid, without flags."""
    return MAGIC + struct.pack("<HHIQII", 1, HEADER_SIZE, 0, 0, pid, 0)


def end(events):
    """The END record of a trace of events events."""
    return ext(REC_END, varint(events) + varint(0))
