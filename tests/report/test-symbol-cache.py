#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The symbol cache (report/symbols/symbol-cache.h) on the "symbols" trace,
whose module is gen-trace itself:

- a report with the cache, first and again, is the report without it;
- the second report takes its frames from the cache file named by the
  build id: a name changed in that file shows up in the report;
- the file is ignored when it names another build id, another size or
  modification time of the library, is damaged, truncated, not a regular
  file of ours, or a symbolic link, and the report rewrites it whole;
- a library rebuilt under the same build id given by hand, its function
  at the same address under a new name, is reported with the new name;
- directories are made 0700 and files 0600 whatever the umask (0277, 0);
  the cache is in $XDG_CACHE_HOME/leakwatch/symbols, else
  ~/.cache/leakwatch/symbols, or where LEAKWATCH_SYMBOL_CACHE says,
  LEAKWATCH_SYMBOL_CACHE=0 turns it off, and 1, yes, on or true keep it
  in its default directory (no directory of that name is made);
- reports written at once leave one whole file, and a cache that cannot
  be written changes nothing.

    test-symbol-cache.py --leakwatch PATH --gen PATH --rebuilt OLD NEW
"""
import argparse
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import check, finish  # noqa: E402
from tracebytes import end, ext, header, varint  # noqa: E402

MAGIC = b"LWSYMS2\n"
# The magic, the build id's length and bytes, the library's size and
# modification time; then the count, the payload's size and hash.
COUNT_AT = 8 + 4 + 64 + 16
HEADER = COUNT_AT + 4 + 8 + 8
CHANGED = "name_from_the_cache"


def build_id(path):
    """The GNU build id of an ELF file's notes, as hex."""
    data = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
    for i in range(shnum):
        _, kind, _, _, offset, size, _, _, _, _ = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize)
        at = offset
        while kind == 7 and at + 12 <= offset + size:  # SHT_NOTE
            namesz, descsz, note = struct.unpack_from("<III", data, at)
            name_at = at + 12
            desc_at = name_at + (namesz + 3) // 4 * 4
            if note == 3 and data[name_at:name_at + namesz] == b"GNU\0":
                return data[desc_at:desc_at + descsz].hex()
            at = desc_at + (descsz + 3) // 4 * 4
    return None


def fnv1a(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return h


def parse(blob):
    """(build id bytes, [(address, [(line, function, file)])], the
    library's (size, modification time)) of a cache file, or None when it
    is not a whole one."""
    if len(blob) < HEADER or blob[:8] != MAGIC:
        return None
    id_len, = struct.unpack_from("<I", blob, 8)
    ident = blob[12:12 + id_len]
    stamp = struct.unpack_from("<QQ", blob, 76)
    count, size, h = struct.unpack_from("<IQQ", blob, COUNT_AT)
    payload = blob[HEADER:]
    if size != len(payload) or fnv1a(payload) != h:
        return None
    at, entries = 0, []

    def string():
        nonlocal at
        n, = struct.unpack_from("<I", payload, at)
        at += 4
        if n == 0xffffffff:
            return None
        s = payload[at:at + n].decode()
        at += n
        return s

    for _ in range(count):
        address, frames = struct.unpack_from("<QI", payload, at)
        at += 12
        items = []
        for _ in range(frames):
            line, = struct.unpack_from("<I", payload, at)
            at += 4
            function = string()
            items.append((line, function, string()))
        entries.append((address, items))
    return ident, entries, stamp


def serialize(ident, entries, stamp):
    def string(s):
        if s is None:
            return struct.pack("<I", 0xffffffff)
        b = s.encode()
        return struct.pack("<I", len(b)) + b

    payload = b"".join(
        struct.pack("<QI", a, len(frames)) + b"".join(
            struct.pack("<I", line) + string(fn) + string(fl)
            for line, fn, fl in frames)
        for a, frames in entries)
    return (MAGIC + struct.pack("<I", len(ident)) + ident.ljust(64, b"\0") +
            struct.pack("<QQ", *stamp) +
            struct.pack("<IQQ", len(entries), len(payload), fnv1a(payload)) +
            payload)


def symbol_value(path, name):
    """The value of name in an ELF file's dynamic symbol table, or None."""
    data = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != 11:  # SHT_DYNSYM
            continue
        strings = sections[link][4]
        for at in range(offset, offset + size, entsize):
            st_name, _, _, _, value, _ = struct.unpack_from("<IBBHQQ", data,
                                                             at)
            end_at = data.index(b"\0", strings + st_name)
            if data[strings + st_name:end_at] == name.encode():
                return value
    return None


def module_trace(path, lib, address):
    """A trace of one allocation made from address of lib, loaded at
    BIAS."""
    bias = 0x7f0000000000
    name = lib.encode()
    with open(path, "wb") as f:
        f.write(header() +
                ext(0x41, varint(bias) + varint(bias) + varint(bias + 0x10000)
                    + varint(len(name)) + name) +
                # One frame: zigzag of the address (positive: twice it).
                ext(0x40, varint(1) + varint(1) + varint(2 * (bias + address)))
                + bytes([1]) + varint(2 * 0x7e0000000000) + varint(4096) +
                varint(1) + end(1))


def rebuilt(args, tmp):
    """A library built again under the same build id given by hand, its
    function at the same address under another name: the report of the
    new file names the new function, not what the cache kept of the old."""
    old, new = args.rebuilt
    names = [os.path.splitext(os.path.basename(p))[0] for p in (old, new)]
    address = symbol_value(old, names[0])
    if not check(address and address == symbol_value(new, names[1]) and
                 build_id(old) == build_id(new),
                 f"{old} and {new}: not one build id, one address"):
        return
    d = os.path.join(tmp, "rebuilt")
    os.mkdir(d)
    lib, trace = os.path.join(d, "libfixture.so"), os.path.join(d, "t.trace")
    module_trace(trace, lib, address + 2)
    env = environment(LEAKWATCH_SYMBOL_CACHE=os.path.join(d, "cache"))
    shutil.copyfile(old, lib)
    before = os.stat(lib)
    out = report(args, trace, env)
    check(names[0] in out, f"the first build's function is not named: {out}")
    # The build writes the library again, as a linker does.
    os.unlink(lib)
    shutil.copyfile(new, lib)
    after = os.stat(lib)
    if after.st_mtime_ns == before.st_mtime_ns:
        # A file system whose clock did not move: as a later build would.
        os.utime(lib, ns=(after.st_atime_ns, after.st_mtime_ns + 10**9))
    out = report(args, trace, env)
    check(names[1] in out and names[0] not in out,
          f"the rebuilt library is reported with the old names: {out}")
    # And its names are kept for the next report.
    check(names[1] in report(args, trace, env),
          "the rebuilt library's names were not cached")


def environment(**settings):
    env = {k: v for k, v in os.environ.items()
           if k not in ("LEAKWATCH_SYMBOL_CACHE", "XDG_CACHE_HOME")}
    for k, v in settings.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def report(args, trace, env, fmt="text", umask=0o022):
    p = subprocess.run([args.leakwatch, "report", "--format", fmt, trace],
                       env=env, capture_output=True, text=True,
                       preexec_fn=lambda: os.umask(umask))
    check(p.returncode == 0 and not p.stderr,
          f"report exited {p.returncode}: {p.stderr}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--leakwatch", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--rebuilt", nargs=2, required=True)
    args = ap.parse_args()
    args.leakwatch = os.path.abspath(args.leakwatch)
    ident = build_id(args.gen)
    if not check(ident, f"{args.gen} has no build id"):
        return finish()
    tmp = tempfile.mkdtemp(prefix="lw-symcache-")
    try:
        run(args, tmp, ident)
        rebuilt(args, tmp)
    finally:
        shutil.rmtree(tmp)
    return finish()


def run(args, tmp, ident):
    trace = os.path.join(tmp, "symbols.trace")
    subprocess.run([args.gen, "symbols", trace], check=True)
    home = os.path.join(tmp, "home")
    os.mkdir(home)
    off = environment(LEAKWATCH_SYMBOL_CACHE="0", HOME=home)
    expected = {fmt: report(args, trace, off, fmt) for fmt in ("text", "json")}
    check("lw_gen_leaky_function" in expected["text"],
          "the trace's frames were not symbolized")
    check(not os.path.exists(os.path.join(home, ".cache")),
          "LEAKWATCH_SYMBOL_CACHE=0 made a cache")

    cache = os.path.join(tmp, "made", "by", "report")
    path = os.path.join(cache, ident)
    env = environment(LEAKWATCH_SYMBOL_CACHE=cache)
    for n, umask in ((1, 0o277), (2, 0)):
        for fmt in ("text", "json"):
            check(report(args, trace, env, fmt, umask) == expected[fmt],
                  f"{fmt} report {n} with the cache differs from without")
    check(os.listdir(cache) == [ident],
          f"cache holds {os.listdir(cache)}, not one file named {ident}")
    for d in (os.path.join(tmp, "made"), os.path.join(tmp, "made", "by"),
              cache):
        check(stat.S_IMODE(os.stat(d).st_mode) == 0o700,
              f"{d}: mode {oct(os.stat(d).st_mode)}, not 0700")
    check(stat.S_IMODE(os.stat(path).st_mode) == 0o600,
          f"{path}: mode {oct(os.stat(path).st_mode)}, not 0600")
    parsed = parse(open(path, "rb").read())
    if not check(parsed, "the cache file is not whole"):
        return
    check(parsed[0].hex() == ident, "the cache file names another build id")
    good = open(path, "rb").read()

    # The report reads the file: a name changed there is shown.
    changed = [(a, [(line, CHANGED if fn == "lw_gen_leaky_function" else fn,
                     fl) for line, fn, fl in frames])
               for a, frames in parsed[1]]
    check(parsed[2] == (os.stat(args.gen).st_size,
                        os.stat(args.gen).st_mtime_ns),
          f"the cache file names another file than {args.gen}: {parsed[2]}")
    doctored = serialize(parsed[0], changed, parsed[2])
    check(doctored != good, "no entry names lw_gen_leaky_function")
    open(path, "wb").write(doctored)
    check(CHANGED in report(args, trace, env),
          "the second report did not take its frames from the cache")

    # Files that are not trusted: another build id, damaged, truncated,
    # foreign bytes, a symbolic link, a directory.
    other = bytes(reversed(parsed[0]))
    size, mtime = parsed[2]
    cases = {
        "another build id": serialize(other, changed, parsed[2]),
        "another size": serialize(parsed[0], changed, (size + 1, mtime)),
        "another modification time": serialize(parsed[0], changed,
                                               (size, mtime + 1)),
        "damaged": doctored[:-3] + bytes([doctored[-3] ^ 1]) + doctored[-2:],
        "truncated": doctored[:len(doctored) // 2],
        "foreign bytes": os.urandom(len(doctored)),
        "empty": b"",
    }
    for what, blob in cases.items():
        open(path, "wb").write(blob)
        check(report(args, trace, env) == expected["text"],
              f"a cache file with {what} was trusted")
        check(open(path, "rb").read() == good,
              f"a cache file with {what} was not written anew")
    target = os.path.join(tmp, "elsewhere")
    open(target, "wb").write(doctored)
    os.unlink(path)
    os.symlink(target, path)
    check(report(args, trace, env) == expected["text"],
          "the cache followed a symbolic link")
    check(open(target, "rb").read() == doctored and
          not os.path.islink(path) and open(path, "rb").read() == good,
          "the link's target was written, or the link left in place")
    if os.geteuid() == 0:
        open(path, "wb").write(doctored)
        os.chown(path, 65534, 65534)
        check(report(args, trace, env) == expected["text"],
              "a cache file of another user was trusted")
    os.unlink(path)
    os.mkdir(path)
    check(report(args, trace, env) == expected["text"],
          "a directory in place of the file changed the report")
    os.rmdir(path)

    # Where the cache is by default.
    xdg = os.path.join(tmp, "xdg")
    report(args, trace, environment(XDG_CACHE_HOME=xdg, HOME=home))
    check(os.path.exists(os.path.join(xdg, "leakwatch", "symbols", ident)),
          "no cache in $XDG_CACHE_HOME/leakwatch/symbols")
    report(args, trace, environment(XDG_CACHE_HOME="relative", HOME=home))
    check(os.path.exists(os.path.join(home, ".cache", "leakwatch", "symbols",
                                      ident)),
          "no cache in ~/.cache/leakwatch/symbols (XDG_CACHE_HOME relative)")
    # The words that turn it on: the default directory, not one named so.
    for word in ("1", "yes", "on", "true"):
        where = os.path.join(tmp, "words", word)
        os.makedirs(where)
        p = subprocess.run([args.leakwatch, "report", trace], cwd=where,
                           env=environment(LEAKWATCH_SYMBOL_CACHE=word,
                                           XDG_CACHE_HOME=xdg, HOME=home),
                           capture_output=True, text=True)
        check(p.returncode == 0 and p.stdout == expected["text"],
              f"LEAKWATCH_SYMBOL_CACHE={word}: exit {p.returncode}")
        check(os.listdir(where) == [],
              f"LEAKWATCH_SYMBOL_CACHE={word} made {os.listdir(where)} in "
              "the current directory")
        os.unlink(os.path.join(xdg, "leakwatch", "symbols", ident))
        report(args, trace, environment(LEAKWATCH_SYMBOL_CACHE=word,
                                        XDG_CACHE_HOME=xdg, HOME=home))
        check(os.path.exists(os.path.join(xdg, "leakwatch", "symbols",
                                          ident)),
              f"LEAKWATCH_SYMBOL_CACHE={word}: no cache in the default "
              "directory")

    # Reports at once: each one right, one whole file left.
    cache = os.path.join(tmp, "at-once")
    env = environment(LEAKWATCH_SYMBOL_CACHE=cache)
    procs = [subprocess.Popen([args.leakwatch, "report", trace], env=env,
                              stdout=subprocess.PIPE, text=True)
             for _ in range(8)]
    outs = [p.communicate()[0] for p in procs]
    check(all(o == expected["text"] for o in outs),
          "a report written at the same time as others differs")
    check(os.listdir(cache) == [ident] and
          open(os.path.join(cache, ident), "rb").read() == good,
          f"reports at once left {os.listdir(cache)}, not one whole file")

    # A cache that cannot be written: the report is the same.
    blocked = os.path.join(tmp, "a-file")
    open(blocked, "w").close()
    check(report(args, trace, environment(LEAKWATCH_SYMBOL_CACHE=blocked)) ==
          expected["text"], "an unusable cache directory changed the report")


if __name__ == "__main__":
    sys.exit(main())
