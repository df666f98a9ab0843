#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Copies a 64-bit little-endian ELF file, giving one symbol of its symbol
table (.symtab) an empty name (st_name 0), which no linker writes.

    blank-symbol-name.py IN OUT NAME
"""
import struct
import sys


def main():
    src, dst, name = sys.argv[1], sys.argv[2], sys.argv[3].encode()
    data = bytearray(open(src, "rb").read())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    blanked = 0
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != 2:  # SHT_SYMTAB
            continue
        strings = sections[link][4]
        for at in range(offset, offset + size, entsize):
            st_name, = struct.unpack_from("<I", data, at)
            end = data.index(b"\0", strings + st_name)
            if data[strings + st_name:end] == name:
                struct.pack_into("<I", data, at, 0)
                blanked += 1
    if blanked != 1:
        sys.exit(f"blank-symbol-name: {blanked} symbols named {name!r}")
    open(dst, "wb").write(data)


if __name__ == "__main__":
    main()
