#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The command's inputs and outputs against what the adversarial trial
tried (issue 33):

- a verdict written where it cannot be (a full disk, a closed standard
  output) fails, as a report does, instead of returning the verdict;
- devices (/dev/zero, /dev/urandom) are refused at once, in bounded memory,
  and a trace streamed through a pipe still reads;
- traces made to be read in quadratic time (unknown phase names among many
  strings, sparse Python code ids, many PyTorch segments, many INFO
  records) finish;
- a trace cut while `report` reads it is refused with a message, not
  SIGBUS;
- `report -o` never writes over one of its inputs nor through a symbolic
  link planted at the output path, leaves what was there when it fails,
  and makes the report private (0600);
- a sparse trace of 1 GiB is read in bounded memory;
- rules and suppressions files (options and environment) are read up to
  4 MiB: /dev/zero, an endless pipe or a larger file is one error line and
  exit 2, in bounded memory (issue 40).

    test-inputs.py --leakwatch CLI --gen GEN-TRACE
"""
import argparse
import os
import pty
import signal
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import check, failures  # noqa: E402
from tracebytes import end, ext, header, varint  # noqa: E402

# Far more than the linear reader needs; the quadratic one took minutes.
# Five times that for a sanitized build.
SLOW = 60


def peak_kib(pid, exe):
    """The process's peak resident memory so far (VmHWM), or 0 before it
    runs exe (until then its memory is this test's)."""
    try:
        if os.readlink(f"/proc/{pid}/exe") != os.path.realpath(exe):
            return 0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def run(args, argv, **kw):
    """(exit status, stdout, stderr, peak resident memory in MiB). The
    peak is the command's own, read while it runs: the exit's ru_maxrss
    would count this test's memory too (a child starts from its parent's
    resident size, and exec keeps that figure)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen([args.leakwatch] + argv, stdout=kw.get(
            "stdout", out), stderr=err, stdin=kw.get("stdin"),
            cwd=kw.get("cwd"), env=kw.get("env"),
            preexec_fn=kw.get("preexec_fn"))
        deadline = time.monotonic() + kw.get("timeout", 60)
        peak = 0
        while True:
            peak = max(peak, peak_kib(p.pid, args.leakwatch))
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                os.wait4(p.pid, 0)
                return None, b"", b"", 0
            time.sleep(0.01)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return p.returncode, out.read(), err.read(), peak / 1024


def outputs_that_fail(args, tmp, trace):
    """Item 15: check and diff fail when their verdict cannot be written."""
    for argv in (["check", "--max-growth", "0", trace], ["diff", trace, trace],
                 ["report", trace]):
        with open("/dev/full", "wb") as full:
            code, _, err, _ = run(args, argv, stdout=full)
        check(code == 2 and b"standard output: No space left on device" in err,
              f"{argv[0]} > /dev/full: exit {code}, {err!r}")
        code, _, err, _ = run(args, argv, stdout=subprocess.DEVNULL)
        check(code in (0, 1, 3), f"{argv[0]} > /dev/null: exit {code}")
        # A closed standard output.
        r = subprocess.run([args.leakwatch] + argv, stdout=None,
                           stderr=subprocess.PIPE, close_fds=True,
                           preexec_fn=lambda: os.close(1))
        check(r.returncode == 2 and b"standard output: " in r.stderr,
              f"{argv[0]} >&-: exit {r.returncode}, {r.stderr!r}")


def devices_and_pipes(args, tmp, trace):
    """Item 16: the magic first; a pipe that streams a trace still reads."""
    for dev in ("/dev/zero", "/dev/urandom"):
        code, out, err, rss = run(args, ["report", dev], timeout=20)
        check(code == 2 and err.count(b"\n") == 1 and b"not a leakwatch trace"
              in err, f"report {dev}: exit {code}, {err!r}")
        check(rss < 256, f"report {dev}: {rss:.0f} MiB")
    with open(trace, "rb") as f:
        data = f.read()
    cat = subprocess.Popen(["cat", trace], stdout=subprocess.PIPE)
    code, out, err, _ = run(args, ["report", "/dev/stdin"], stdin=cat.stdout)
    cat.stdout.close()
    cat.wait()
    code2, out2, _, _ = run(args, ["report", trace])
    check(code == 0 and out.replace(b"/dev/stdin", b"T") ==
          out2.replace(trace.encode(), b"T"),
          f"a piped trace: exit {code}, {err!r}")
    # A pipe that streams something else: refused after its first bytes.
    r = subprocess.run([args.leakwatch, "report", "/dev/stdin"],
                       input=b"not a trace at all" + bytes(1 << 20),
                       capture_output=True, timeout=60)
    check(r.returncode == 2 and b"not a leakwatch trace" in r.stderr,
          f"a pipe of something else: {r.returncode}, {r.stderr!r}")
    # A short one: the header cut.
    r = subprocess.run([args.leakwatch, "report", "/dev/stdin"],
                       input=data[:20], capture_output=True, timeout=60)
    check(r.returncode == 2 and b"incomplete trace header" in r.stderr,
          f"a pipe of 20 bytes: {r.returncode}, {r.stderr!r}")


def slow_traces(args, tmp):
    """Item 17: inputs that made the reader quadratic finish."""
    with open(args.leakwatch, "rb") as f:
        slow = SLOW * (5 if b"__asan_init" in f.read() else 1)
    n = 300000
    strings = b"".join(ext(0x42, varint(1000000 + i) + b"s")
                       for i in range(n))
    phases = (ext(0x43, varint(7)) + b"\x0a") * n
    path = os.path.join(tmp, "phases.trace")
    with open(path, "wb") as f:
        f.write(header() + strings + phases + end(n))
    code, out, err, _ = run(args, ["report", path], timeout=slow)
    check(code == 0, f"unknown phase names among {n} strings: exit {code}")

    body = bytearray()
    n = 200000
    for i in range(n):
        code_id = 1 << 40 | i
        body += ext(0x48, varint(code_id) + b"\1\1\1")
        body += ext(0x40, varint(i + 1) + varint(1) + varint(2 * i + 2))
        body += ext(0x49, varint(i + 1) + varint(1) + varint(code_id) +
                    varint(4) + varint(0))
        body += b"\x01" + varint(2 * 4096) + varint(64) + varint(i + 1)
    path = os.path.join(tmp, "codes.trace")
    with open(path, "wb") as f:
        f.write(header() + bytes(body) + end(n))
    code, _, err, _ = run(args, ["report", "--format", "json", path],
                          timeout=slow)
    check(code == 0, f"sparse code ids: exit {code}, {err[:200]!r}")

    n = 400000
    segments = b"".join(ext(0x4c, varint(1 << 40 | i << 21) + varint(2 << 20)
                            + varint(0)) for i in range(n))
    path = os.path.join(tmp, "segments.trace")
    with open(path, "wb") as f:
        f.write(header() + segments + end(0))
    code, _, err, _ = run(args, ["report", path], timeout=slow)
    check(code == 0, f"{n} PyTorch segments: exit {code}, {err[:200]!r}")

    m = 200000
    infos = b"".join(ext(0x44, varint(len(b"k%d" % i)) + b"k%d" % i +
                         b"\x01v") for i in range(m))
    path = os.path.join(tmp, "infos.trace")
    with open(path, "wb") as f:
        f.write(header() + infos + ext(0x44, b"\x03exe\x02/x") + end(0))
    code, out, err, _ = run(args, ["report", "--format", "json", path],
                            timeout=slow)
    check(code == 0 and out.count(b'": "v"') == m and b'"exe": "/x"' in out,
          f"{m} INFO records: exit {code}")


def shrinks_while_read(args, tmp):
    """Item 18: a trace cut while `report` reads it. The report shows its
    progress on a terminal (LEAKWATCH_PROGRESS=1), is stopped at its first
    progress line, and the file is cut under it."""
    big = os.path.join(tmp, "big.trace")
    subprocess.run([args.gen, "large", big, "3000000"], check=True)
    size = os.path.getsize(big)
    master, slave = pty.openpty()
    env = dict(os.environ, LEAKWATCH_PROGRESS="1",
               ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") +
               ":handle_sigbus=0:allow_user_segv_handler=1")
    p = subprocess.Popen([args.leakwatch, "report", big],
                         stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    seen = b""
    while b"%" not in seen:
        chunk = os.read(master, 1024)
        if not chunk:
            break
        seen += chunk
    p.send_signal(signal.SIGSTOP)
    os.truncate(big, size // 3)
    p.send_signal(signal.SIGCONT)
    rest = b""
    try:
        while True:
            chunk = os.read(master, 4096)
            if not chunk:
                break
            rest += chunk
    except OSError:
        pass
    p.wait(timeout=120)
    os.close(master)
    text = (seen + rest).decode(errors="replace")
    check(p.returncode == 2 and "shrank while it was read" in text,
          f"cut while read: exit {p.returncode}, {text[-300:]!r}")


def output_file(args, tmp, trace):
    """Items 19 and 20: -o and its input, links, failures, mode."""
    own = os.path.join(tmp, "own.trace")
    with open(trace, "rb") as f:
        data = f.read()
    for fmt in ("text", "html", "json"):
        with open(own, "wb") as f:
            f.write(data)
        code, _, err, _ = run(args, ["report", "--format", fmt, "-o", own,
                                     own])
        with open(own, "rb") as f:
            check(f.read() == data, f"-o its input ({fmt}): the trace "
                  "was written over")
        check(code == 2 and b"which the report reads" in err,
              f"-o its input ({fmt}): exit {code}, {err!r}")
    # Another name of the same file: a hard link, a symbolic one.
    alias = os.path.join(tmp, "alias.trace")
    os.link(own, alias)
    link = os.path.join(tmp, "link.trace")
    os.symlink(own, link)
    for other in (alias, link):
        code, _, _, _ = run(args, ["report", "-o", other, own])
        with open(own, "rb") as f:
            check(code == 2 and f.read() == data,
                  f"-o {os.path.basename(other)}: exit {code}")
    # A symbolic link planted at the output path: replaced, not followed.
    victim = os.path.join(tmp, "victim")
    with open(victim, "w") as f:
        f.write("keep me\n")
    planted = os.path.join(tmp, "planted.html")
    os.symlink(victim, planted)
    code, _, err, _ = run(args, ["report", "--format", "html", "-o", planted,
                                 trace])
    with open(victim) as f:
        check(f.read() == "keep me\n", "written through a planted link")
    check(code == 0 and not os.path.islink(planted),
          f"planted link: exit {code}, {err!r}")
    # Private, whatever the umask.
    out = os.path.join(tmp, "report.txt")
    old = os.umask(0o022)
    try:
        run(args, ["report", "-o", out, trace])
    finally:
        os.umask(old)
    mode = stat.S_IMODE(os.stat(out).st_mode)
    check(mode == 0o600, f"report mode {mode:o}")
    # A report that fails leaves the old file as it was, and no
    # temporary file behind.
    with open(out, "w") as f:
        f.write("previous\n")
    code, _, _, _ = run(args, ["report", "-o", out, "missing.trace"],
                        cwd=tmp)
    with open(out) as f:
        check(code == 2 and f.read() == "previous\n",
              f"a report of a missing trace: exit {code}")
    check(not [n for n in os.listdir(tmp) if n.startswith(".report.txt.")],
          f"temporary files left: {os.listdir(tmp)}")
    # Devices are written as they are.
    code, out_bytes, _, _ = run(args, ["report", "-o", "/dev/stdout", trace])
    check(code == 0 and b"leak report" in out_bytes, "-o /dev/stdout")
    code, _, _, _ = run(args, ["report", "-o", "/dev/null", trace])
    check(code == 0 and stat.S_ISCHR(os.stat("/dev/null").st_mode),
          "-o /dev/null")


def sparse(args, tmp):
    """Item 21: 1 GiB of holes after the header, in bounded memory."""
    path = os.path.join(tmp, "sparse.trace")
    with open(path, "wb") as f:
        f.write(header())
        f.truncate(1 << 30)
    code, out, err, rss = run(args, ["report", path], timeout=300)
    check(code == 0 and b"TRUNCATED" in out, f"sparse: exit {code}, {err!r}")
    check(rss < 256, f"sparse 1 GiB trace: {rss:.0f} MiB of memory")
    os.unlink(path)


def rule_files(args, tmp, trace):
    """Rules and suppressions files are bounded (4 MiB): what gives more is
    refused at once, with the file named, never read until memory runs
    out. The command runs under a 1 GiB address space limit (not under
    ASan, which reserves more), so that a reader without the bound fails
    here rather than take the machine's memory."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    with open(args.leakwatch, "rb") as f:
        limited = None if b"__asan_init" in f.read() else limit
    big = os.path.join(tmp, "big.rules")
    with open(big, "wb") as f:
        f.write(b"# a comment line of forty bytes or so.\n" * (5 << 15))
    fifo = os.path.join(tmp, "endless.rules")
    os.mkfifo(fifo)
    env = dict(os.environ)
    for name in ("/dev/zero", fifo, big):
        for what, argv, var in (
                ("rules file", ["report", "--rules", name, trace], None),
                ("suppressions file",
                 ["check", "--max-growth", "1MiB", "--suppressions", name,
                  trace], None),
                ("rules file", ["report", trace], "LEAKWATCH_RULES"),
                ("suppressions file", ["diff", trace, trace],
                 "LEAKWATCH_SUPPRESSIONS")):
            feeder = None
            if name == fifo:
                # An endless writer, as `yes` would be.
                feeder = subprocess.Popen(
                    ["sh", "-c", f"exec yes '# x' > '{fifo}'"],
                    stderr=subprocess.DEVNULL)
            e = dict(env, **({var: name} if var else {}))
            code, out, err, rss = run(args, argv, env=e, timeout=30,
                                      preexec_fn=limited)
            if feeder:
                feeder.kill()
                feeder.wait()
            label = f"{argv[0]} {var or argv[1]} {name}"
            check(code == 2 and err.count(b"\n") == 1 and
                  name.encode() in err and
                  f"more than 4 MiB, the most a {what}".encode() in err,
                  f"{label}: exit {code}, {err[:300]!r}")
            check(rss < 256, f"{label}: {rss:.0f} MiB of memory")
    # Within the bound, a pipe still reads.
    r = subprocess.run([args.leakwatch, "check", "--max-growth", "1MiB",
                        "--suppressions", "/dev/stdin", trace],
                       input=b"leak:nothing_matches_this\n",
                       capture_output=True, timeout=60)
    check(r.returncode == 0, f"suppressions from a pipe: exit {r.returncode},"
          f" {r.stderr!r}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--leakwatch", required=True)
    p.add_argument("--gen", required=True)
    args = p.parse_args()
    args.leakwatch = os.path.abspath(args.leakwatch)
    args.gen = os.path.abspath(args.gen)
    with tempfile.TemporaryDirectory(prefix="lw-inputs-") as tmp:
        trace = os.path.join(tmp, "leak-loop.trace")
        subprocess.run([args.gen, "leak-loop", trace], check=True)
        rule_files(args, tmp, trace)
        outputs_that_fail(args, tmp, trace)
        devices_and_pipes(args, tmp, trace)
        output_file(args, tmp, trace)
        slow_traces(args, tmp)
        shrinks_while_read(args, tmp)
        sparse(args, tmp)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
