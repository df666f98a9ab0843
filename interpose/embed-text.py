#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a C file that defines `const char NAME[]`, a text file's bytes
and a terminating NUL, so that the shim carries its Python code with it.
(An array of numbers, not a string literal: ISO C limits those to 4095
characters.)
    embed-text.py NAME INPUT OUTPUT"""
import sys

name, src, out = sys.argv[1:4]
with open(src, "rb") as f:
    data = f.read() + b"\0"
lines = ["/* Generated from %s by embed-text.py. */\n" % src.split("/")[-1],
         "extern const char %s[];\n" % name,
         "const char %s[] = {\n" % name]
for i in range(0, len(data), 16):
    lines.append("\t" + " ".join("%d," % b for b in data[i:i + 16]) + "\n")
lines.append("};\n")
with open(out, "w", encoding="ascii") as f:
    f.writelines(lines)
