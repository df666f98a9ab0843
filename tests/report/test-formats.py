#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The html, perfetto, folded and github formats on gen-trace's "formats"
run (a Python training loop with phases that keeps 4 KiB per step in a
function and file whose names hold HTML and U+2028), checked against the
JSON report of the same trace; `leakwatch diff` on its variants (fixed,
worse, under other stack ids and lines); the merged view of two ranks.
"""
import argparse
import html.parser
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import fail, failures  # noqa: E402

HOSTILE_FILE = "</script><script>document.title='pwned'</script>,v2:a.py"
HOSTILE_FUNCTION = "log_loss\u2028<img src=x onerror=alert(1)>\u2029\"&'"


def run(argv, cwd):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LEAKWATCH_")}
    return subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=120)


def report(args, tmp, fmt, *traces):
    p = run([args.leakwatch, "report", "--format", fmt, *traces], tmp)
    if p.returncode != 0:
        fail(f"report --format {fmt}: exit {p.returncode}: {p.stderr!r}")
    return p.stdout.decode("utf-8")


def check_folded(args, tmp, rep):
    out = report(args, tmp, "folded", "formats.trace")
    lines = out.rstrip("\n").split("\n")
    if "\u2028" in out or "\u2029" in out:
        fail("folded output holds a Unicode line separator")
    # One line per live device site, bytes as the JSON report has them.
    want = sorted(s["live_bytes"] for s in rep["sites"]
                  if s["kind"] in ("device", "managed") and s["live_bytes"])
    got = sorted(int(line.rsplit(" ", 1)[1]) for line in lines)
    if got != want:
        fail(f"folded bytes {got} != JSON live_bytes {want}")
    for line in lines:
        stack = line.rsplit(" ", 1)[0]
        frames = stack.split(";")
        if "\n" in stack or "\r" in stack:
            fail(f"folded line holds a line break: {line!r}")
        if "<module> (train.py:50)" not in frames:
            fail(f"folded stack lacks the Python caller: {line!r}")
    leak = [line for line in lines if "log_loss" in line]
    if len(leak) != 1 or not leak[0].endswith(" %d" % (120 * 4096)):
        fail(f"folded: the kept-per-step site is not 120 x 4 KiB: {leak}")
    # Outermost first: the program's <module> frame comes before log_loss.
    if leak and leak[0].index("<module>") > leak[0].index("log_loss"):
        fail("folded frames are not outermost first")


def check_github(args, tmp, rep):
    out = report(args, tmp, "github", "formats.trace")
    lines = out.rstrip("\n").split("\n") if out else []
    # One annotation per leak the diagnosis found, in its order.
    leaks = [f for f in rep["findings"] if f["leak"] and not f["suppressed"]]
    if len(lines) != len(leaks) or not lines:
        fail(f"github: {len(lines)} annotations for {len(leaks)} leak findings")
        return
    m = re.match(r"^::warning (file=([^,]*),line=(\d+),)?title=([^:]*)::(.*)$",
                 lines[0])
    if not m:
        fail(f"github: not a workflow command: {lines[0]!r}")
        return
    prop_file, line, title, message = m.group(2), m.group(3), m.group(4), m.group(5)

    def unescape(s):
        return (s.replace("%0A", "\n").replace("%0D", "\r")
                .replace("%3A", ":").replace("%2C", ",").replace("%25", "%"))
    if unescape(prop_file) != HOSTILE_FILE:
        fail(f"github file= {prop_file!r} does not unescape to the file")
    if ":" in prop_file or "," in prop_file:
        fail("github: ':' or ',' unescaped in a property")
    if line != "41":
        fail(f"github line= {line}, want 41")
    if "4.0 KiB" not in unescape(title):
        fail(f"github title {title!r} lacks the rate")
    if "\n" in message or "%0A" not in message:
        fail("github: the message's line break is not %0A")
    if HOSTILE_FUNCTION not in unescape(message):
        fail(f"github message lacks the function: {message!r}")


def check_perfetto(args, tmp, rep):
    out = report(args, tmp, "perfetto", "formats.trace", "formats-rank1.trace")
    try:
        doc = json.loads(out)
    except ValueError as e:
        fail(f"perfetto output is not JSON: {e}")
        return
    events = doc["traceEvents"]
    pids = {e["pid"] for e in events}
    if len(pids) != 2:
        fail(f"perfetto: {len(pids)} processes for two traces")
    mine = [e for e in events if e["pid"] == rep["pid"]]
    counters = [e for e in mine if e["ph"] == "C" and e["name"] == "device memory"]
    series = {p["step"]: p["live_bytes"] for p in rep["step_series"]}
    if [e["args"]["bytes"] for e in counters[1:-1]] != list(series.values()):
        fail("perfetto device memory counter differs from the step series")
    ts = [e["ts"] for e in counters]
    if ts != sorted(ts):
        fail("perfetto counter timestamps go backwards")
    steps = [e for e in mine if e["ph"] == "X" and e["tid"] == 1]
    if len(steps) != rep["steps"]:
        fail(f"perfetto: {len(steps)} step slices for {rep['steps']} steps")
    phases = [e for e in mine if e["ph"] == "X" and e["tid"] == 2]
    names = sorted({e["name"] for e in phases})
    if names != ["eval", "train"] or \
            sum(e["name"] == "train" for e in phases) != 120 or \
            sum(e["name"] == "eval" for e in phases) != 6:
        fail(f"perfetto phases wrong: {names}, {len(phases)} slices")
    evals = [e for e in phases if e["name"] == "eval"]
    if any(e["dur"] <= 0 for e in evals):
        fail("perfetto: eval phases have no duration (TIME records inside)")
    instants = [e for e in mine if e["ph"] == "i"]
    leaks = [f for f in rep["findings"] if f["leak"] and not f["suppressed"]]
    if len(instants) != len(leaks) or "log_loss" not in instants[0]["name"] or \
            HOSTILE_FILE not in instants[0]["args"]["location"] or \
            not instants[0]["name"].startswith(leaks[0]["category"] + ":") or \
            instants[0]["args"]["fix"] != leaks[0]["fix"]:
        fail(f"perfetto findings: {instants}")
    if not any(e["ph"] == "M" and e["name"] == "process_name" and
               e["args"]["name"].startswith("rank 1:") for e in events):
        fail("perfetto: rank 1's process is not named by its rank")


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.scripts = []
        self.in_script = None
        self.text = []
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self.in_script = dict(attrs)
            self.scripts.append([dict(attrs), ""])

    def handle_endtag(self, tag):
        if tag == "script":
            self.in_script = None

    def handle_data(self, data):
        if self.in_script is not None:
            self.scripts[-1][1] += data
        else:
            self.text.append(data)


def check_html(args, tmp, rep):
    p = run([args.leakwatch, "report", "--format", "html", "-o", "r.html",
             "formats.trace"], tmp)
    if p.returncode != 0:
        fail(f"html: exit {p.returncode} {p.stderr!r}")
        return
    page = open(os.path.join(tmp, "r.html"), encoding="utf-8").read()
    for needle in ("http://", "https://", "src=\"", "@import", "url("):
        # The SVG namespace is the one URL the script names.
        if needle in page.replace("http://www.w3.org/2000/svg", ""):
            fail(f"html refers outside itself: {needle}")
    parser = Page()
    parser.feed(page)
    scripts = parser.scripts
    if len(scripts) != 2:
        fail(f"html: {len(scripts)} script elements, want 2 (data + code): "
             "a name closed the data element")
        return
    data_attrs, data = scripts[0]
    if data_attrs.get("type") != "application/json":
        fail("html: the first script is not the data")
        return
    for bad in ("</", "\u2028", "\u2029", "<img"):
        if bad in data:
            fail(f"html data holds {bad!r} unescaped")
    d = json.loads(data)
    if [p[1] for p in d["steps"]] != [p["live_bytes"] for p in rep["step_series"]]:
        fail("html step series differs from the JSON report")
    if d["peak"] != rep["peak"]:
        fail(f"html peak {d['peak']} != {rep['peak']}")
    if sum(p["name"] == "eval" for p in d["phases"]) != 6:
        fail("html: eval phases missing")
    if not d["sites"] or HOSTILE_FUNCTION not in d["sites"][0]["label"]:
        fail(f"html: the growing site does not lead the lines: {d['sites'][:1]}")
    if d["flame"]["v"] != rep["live_bytes_at_exit"]:
        fail(f"html icicle total {d['flame']['v']} != {rep['live_bytes_at_exit']}")

    def total(node):
        return node["v"] >= sum(c["v"] for c in node["c"]) and \
            all(total(c) for c in node["c"])
    if not total(d["flame"]):
        fail("html icicle: a node holds less than its children")
    text = "".join(parser.text)
    if HOSTILE_FUNCTION not in text or HOSTILE_FILE not in text:
        fail("html: the finding's names are not shown as text")
    if any(t == "img" for t, _ in parser.tags):
        fail("html: a name from the trace became an element")


def check_diff(args, tmp):
    lw = args.leakwatch
    # (before, after): exit status, the change named for the kept site
    cases = {
        ("formats.trace", "formats-fixed.trace"): (0, "fixed"),
        ("formats.trace", "formats-worse.trace"): (1, "WORSE"),
        ("formats-fixed.trace", "formats.trace"): (1, "NEW LEAK"),
        ("formats.trace", "formats.trace"): (0, "still growing"),
    }
    for (before, after), (status, change) in cases.items():
        p = run([lw, "diff", before, after], tmp)
        out = p.stdout.decode("utf-8")
        if p.returncode != status:
            fail(f"diff {before} {after}: exit {p.returncode}, want {status}")
        kept = [line for line in out.split("\n") if line.startswith("  ")
                and "growth" in line and "->" in line and "KiB/step" in line]
        if not kept or not kept[0].strip().startswith(change):
            fail(f"diff {before} {after}: want {change!r} first: {out}")
        # The weights and the evaluation cache match by name even though
        # stack ids (fixed) and lines (worse) differ.
        if "2 locations unchanged" not in out:
            fail(f"diff {before} {after}: sites not matched by name: {out}")
    for argv in (["diff", "formats.trace"],
                 ["diff", "formats.trace", "missing.trace"],
                 ["diff", "--top", "x", "formats.trace", "formats.trace"]):
        p = run([lw, *argv], tmp)
        if p.returncode != 2 or len(p.stderr.splitlines()) != 1:
            fail(f"{argv}: exit {p.returncode}, stderr {p.stderr!r}")


def check_merged(args, tmp):
    lw = args.leakwatch
    p = run([lw, "report", "formats-rank1.trace", "formats-rank0.trace"], tmp)
    out = p.stdout.decode("utf-8")
    view = out[out.find("Merged view of 2 traces:"):]
    if p.returncode != 0 or not view:
        fail(f"report of two ranks: no merged view (exit {p.returncode})")
        return
    lines = view.split("\n")
    if not (lines[1].startswith("  rank 0:") and lines[2].startswith("  rank 1:")):
        fail(f"merged view not in rank order: {lines[1:3]}")
    if "+67.0 KiB per step" not in lines[1] or "+71.0 KiB per step" not in lines[2]:
        fail(f"merged view: per-rank growth wrong: {lines[1:3]}")
    if "peak: 41.5 MiB (rank 0) to 41.9 MiB (rank 1)" not in view:
        fail(f"merged view: imbalance wrong: {view}")
    if "rank 0 +4.0 KiB/step, rank 1 +8.0 KiB/step" not in view or \
            "sites common to all traces: 3; sites in only some: 0" not in view:
        fail(f"merged view: common sites wrong: {view}")
    p = run([lw, "check", "--max-growth", "1MiB", "formats-rank0.trace",
             "formats-rank1.trace"], tmp)
    if p.returncode != 0 or b"Merged view of 2 traces" not in p.stdout:
        fail(f"check of two ranks: exit {p.returncode}, no merged view")


def read_on_terminal(argv, cwd, setting):
    """stderr of argv when it is a terminal (a pseudo-terminal)."""
    import pty
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LEAKWATCH_")}
    env["LEAKWATCH_PROGRESS"] = setting
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                         stderr=slave)
    os.close(slave)
    data = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    p.wait(timeout=120)
    os.close(master)
    return p.returncode, data


def check_progress(args, tmp):
    """On a terminal a long read shows "reading PATH: N%" and erases it;
    never on a pipe, nor with LEAKWATCH_PROGRESS=0."""
    subprocess.run([args.gen, "large", os.path.join(tmp, "large.trace"),
                    "1000000"], check=True)
    argv = [args.leakwatch, "report", "large.trace"]
    rc, err = read_on_terminal(argv, tmp, "1")
    shown = re.findall(rb"\rleakwatch: reading large\.trace: (\d+)%", err)
    if rc != 0 or len(shown) < 2 or not err.endswith(b"\r\x1b[K"):
        fail(f"progress on a terminal: exit {rc}, {err[:300]!r}")
    elif [int(x) for x in shown] != sorted(int(x) for x in shown):
        fail(f"progress goes backwards: {shown}")
    rc, err = read_on_terminal(argv, tmp, "0")
    if err:
        fail(f"LEAKWATCH_PROGRESS=0 still shows progress: {err[:200]!r}")
    env = dict(os.environ, LEAKWATCH_PROGRESS="1")
    p = subprocess.run(argv, cwd=tmp, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    if p.stderr:
        fail(f"progress on a pipe: {p.stderr[:200]!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--leakwatch", required=True)
    ap.add_argument("--gen", required=True)
    args = ap.parse_args()
    args.leakwatch = os.path.abspath(args.leakwatch)
    args.gen = os.path.abspath(args.gen)
    with tempfile.TemporaryDirectory() as tmp:
        for s in ("formats", "formats-fixed", "formats-worse",
                  "formats-rank0", "formats-rank1"):
            subprocess.run([args.gen, s, os.path.join(tmp, s + ".trace")],
                           check=True)
        rep = json.loads(report(args, tmp, "json", "formats.trace"))
        check_folded(args, tmp, rep)
        check_github(args, tmp, rep)
        check_perfetto(args, tmp, rep)
        check_html(args, tmp, rep)
        check_diff(args, tmp)
        check_merged(args, tmp)
        check_progress(args, tmp)
        p = run([args.leakwatch, "report", "--format", "svg", "formats.trace"],
                tmp)
        if p.returncode != 2 or b"unknown format 'svg'" not in p.stderr:
            fail(f"bad format: exit {p.returncode} {p.stderr!r}")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
