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
REC_CHECKSUM = 0x50
FLAG_CHECKSUMS = 1
# Fixed records: their tag and how many varints follow it (tags from
# 0x40 up carry a length instead).
FIXED_FIELDS = {1: 3, 2: 3, 3: 3, 4: 3, 8: 1, 9: 0, 10: 0, 11: 1, 12: 1,
                13: 3}


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


def records(data):
    """The records after the header: (start, end, tag) each, up to the
    first that does not parse."""
    i = HEADER_SIZE
    while i < len(data):
        start, tag = i, data[i]
        i += 1
        try:
            if tag in FIXED_FIELDS:
                for _ in range(FIXED_FIELDS[tag]):
                    _, i = read_varint(data, i)
            elif tag >= 0x40:
                n, i = read_varint(data, i)
                i += n
            else:
                return
        except IndexError:
            return
        if i > len(data):
            return
        yield start, i, tag


def ext(tag, payload):
    """An extended record: its tag, its payload's length, the payload."""
    return bytes([tag]) + varint(len(payload)) + payload


def header(pid=4242):
    """A version 1 header of a trace of process pid, without flags."""
    return MAGIC + struct.pack("<HHIQII", 1, HEADER_SIZE, 0, 0, pid, 0)


def end(events, dropped=0):
    """The END record of a trace of events events."""
    return ext(REC_END, varint(events) + varint(dropped))
