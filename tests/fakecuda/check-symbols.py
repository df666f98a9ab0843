#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that the stand-in libcudart.so.13 looks like the real one to the
dynamic linker: its SONAME, and every export versioned with the node the real
library uses (named, like the library, libcudart.so.13). A program linked
against one then binds to the other, and an LD_PRELOADed shim meets the same
symbol versions in tests as on a GPU machine.

Usage:
  check-symbols.py --readelf READELF --lib LIB [--program EXE ...]
                   [--program-symbol NAME ...] [--reference REAL_LIB]

--program checks that EXE's references to the --program-symbol names carry
the version. --reference, if that file exists, also checks that every symbol
the stand-in exports exists, with the same version, in the real library.
Exits 0 on success, 1 on a failed check, 77 (skip) without readelf.
"""
import argparse
import os
import re
import subprocess
import sys

SONAME = 'libcudart.so.13'
VERSION = 'libcudart.so.13'
REQUIRED = ['cudaMalloc', 'cudaFree', 'cudaMallocAsync', 'cudaMallocAsync_ptsz',
            'cudaFreeAsync_ptsz', 'cudaMallocFromPoolAsync_ptsz', 'cudaHostRegister']

# "  42: 0000000000001234  100 FUNC GLOBAL DEFAULT 12 cudaMalloc@@libcudart.so.13"
SYMBOL_LINE = re.compile(r'^\s*\d+:\s+[0-9a-fA-F]+\s+\d+\s+(\w+)\s+(\w+)\s+(\w+)\s+(\S+)\s+(\S+)')


def readelf(tool, *args):
    result = subprocess.run([tool, '-W', *args], check=True, capture_output=True, text=True)
    return result.stdout


def dynamic_symbols(tool, path):
    """Returns {name: (version or None, defined, default)} of the dynamic
    symbol table."""
    symbols = {}
    for line in readelf(tool, '--dyn-syms', path).splitlines():
        match = SYMBOL_LINE.match(line)
        if not match:
            continue
        _, bind, _, ndx, name = match.groups()
        if bind == 'LOCAL' or not name:
            continue
        version = None
        default = False
        if '@@' in name:
            name, version = name.split('@@', 1)
            default = True
        elif '@' in name:
            name, version = name.split('@', 1)
        symbols[name] = (version, ndx not in ('UND', 'ABS'), default)
    return symbols


def soname(tool, path):
    match = re.search(r'\(SONAME\)\s+Library soname: \[([^\]]+)\]', readelf(tool, '-d', path))
    return match.group(1) if match else None


def check_library(tool, path, errors):
    if os.path.basename(path) != SONAME:
        errors.append('%s: the file should be named %s' % (path, SONAME))
    name = soname(tool, path)
    if name != SONAME:
        errors.append('%s: SONAME is %s, expected %s' % (path, name, SONAME))
    symbols = dynamic_symbols(tool, path)
    exported = {n: s for n, s in symbols.items() if s[1]}
    for name in REQUIRED:
        if name not in exported:
            errors.append('%s: does not export %s' % (path, name))
    for name, (version, _, default) in sorted(exported.items()):
        # The real runtime also exports the __cuda* functions that nvcc's
        # generated code calls to register and launch kernels.
        if not name.startswith(('cuda', '__cuda')):
            errors.append('%s: exports %s: only cuda* and __cuda* names should be exported'
                          % (path, name))
        elif version != VERSION or not default:
            errors.append('%s: %s is versioned %s, expected %s@@%s'
                          % (path, name, version, name, VERSION))
    return exported


def check_program(tool, path, wanted, errors):
    symbols = dynamic_symbols(tool, path)
    for name in wanted:
        if name not in symbols:
            errors.append('%s: does not reference %s' % (path, name))
            continue
        version, defined, _ = symbols[name]
        if defined or version != VERSION:
            errors.append('%s: references %s@%s, expected %s@%s'
                          % (path, name, version, name, VERSION))


def check_reference(tool, path, exported, errors):
    real = dynamic_symbols(tool, path)
    for name in sorted(exported):
        if name not in real or not real[name][1]:
            errors.append('%s is not exported by the real runtime %s' % (name, path))
        elif real[name][0] != exported[name][0]:
            errors.append('%s is versioned %s in the real runtime, %s here'
                          % (name, real[name][0], exported[name][0]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--readelf', default='')
    parser.add_argument('--lib', required=True)
    parser.add_argument('--program', action='append', default=[])
    parser.add_argument('--program-symbol', action='append', default=[])
    parser.add_argument('--reference', default='')
    args = parser.parse_args()
    if not args.readelf:
        print('no readelf: skipping')
        return 77

    errors = []
    try:
        exported = check_library(args.readelf, args.lib, errors)
        for program in args.program:
            check_program(args.readelf, program, args.program_symbol or REQUIRED, errors)
        if args.reference and os.path.exists(args.reference):
            check_reference(args.readelf, args.reference, exported, errors)
        elif args.reference:
            print('note: no real runtime at %s, not comparing with it' % args.reference)
    except (OSError, subprocess.CalledProcessError) as e:
        errors.append('running readelf: %s' % e)
    for error in errors:
        print('FAIL: ' + error)
    if errors:
        return 1
    print('ok: %d symbols, all %s@@%s' % (len(exported), 'cuda*', VERSION))
    return 0


if __name__ == '__main__':
    sys.exit(main())
