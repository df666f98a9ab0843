#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The HTML report in a real headless browser (Debian's chromium).

Renders `leakwatch report --format html` of gen-trace's "formats" run (a
growing site whose function and file names hold HTML) and a two-rank pair,
then checks, in the DOM after the page's script ran: the script finished
(data-lw-rendered), the memory chart with its peak marker and phase bands,
the growth lines and the icicle are there, no name from the trace became
markup (no <img>, the title is untouched), and the browser logged no
uncaught error. Takes a screenshot (kept in the build directory as
html-report.png), and one of a plain growing run for the README
(--readme-screenshot; docs/html-report.png is a copy). Exits 77 (skipped) when chromium is not installed.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import conclude  # noqa: E402

BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-extensions", "--hide-scrollbars",
                 "--virtual-time-budget=10000"]


def browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--leakwatch", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--screenshot", default="html-report.png")
    ap.add_argument("--readme-screenshot")
    args = ap.parse_args()
    args.leakwatch = os.path.abspath(args.leakwatch)
    args.gen = os.path.abspath(args.gen)
    chrome = browser()
    if not chrome:
        print("chromium is not installed: skipped")
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for s in ("formats", "formats-rank0", "formats-rank1"):
            subprocess.run([args.gen, s, os.path.join(tmp, s + ".trace")],
                           check=True)
        page = os.path.join(tmp, "report.html")
        subprocess.run([args.leakwatch, "report", "--format", "html", "-o",
                        page, "formats.trace", "formats-rank0.trace",
                        "formats-rank1.trace"], cwd=tmp, check=True)
        profile = os.path.join(tmp, "profile")
        common = BROWSER_FLAGS + ["--user-data-dir=" + profile]
        dom = subprocess.run(
            [chrome, *common, "--enable-logging=stderr", "--v=0",
             "--dump-dom", "file://" + page],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        text = dom.stdout.decode("utf-8", "replace")
        log = dom.stderr.decode("utf-8", "replace")
        if dom.returncode != 0 or not text:
            print(log[-3000:])
            print(f"FAIL: chromium --dump-dom exited {dom.returncode}")
            return 1
        for line in log.splitlines():
            if "CONSOLE" in line or "Uncaught" in line:
                failures.append("console: " + line)
        if 'data-lw-rendered="1"' not in text:
            failures.append("the page's script did not finish")
        counts = {
            "memory charts": len(re.findall(r'data-lw-chart="memory"', text)),
            "growth charts": len(re.findall(r'data-lw-chart="sites"', text)),
            "icicles": len(re.findall(r'data-lw-chart="flame"', text)),
            "peak markers": len(re.findall(r'class="lw-peak"', text)),
        }
        for what, n in counts.items():
            if n != 3:
                failures.append(f"{n} {what}, want 3 (one per trace)")
        if len(re.findall(r'class="lw-phase"', text)) < 3 * 126:
            failures.append("phase bands missing (120 train + 6 eval per trace)")
        if len(re.findall(r'class="lw-flame-node"', text)) < 3 * 4:
            failures.append("icicle nodes missing")
        if len(re.findall(r'class="lw-line"', text)) < 3:
            failures.append("growth lines missing")
        if re.search(r"<img", text, re.I):
            failures.append("a name from the trace became an <img> element")
        if "pwned" in re.search(r"<title>(.*?)</title>", text, re.S).group(1):
            failures.append("a name from the trace ran as script")
        shot = os.path.abspath(args.screenshot)
        p = subprocess.run([chrome, *common, "--screenshot=" + shot,
                            "--window-size=1280,2000", "file://" + page],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        if p.returncode != 0 or not os.path.exists(shot) or \
                os.path.getsize(shot) < 10000:
            failures.append("no screenshot was taken")
        else:
            print("screenshot:", shot)
        if args.readme_screenshot:
            trace = os.path.join(tmp, "step-linear.trace")
            subprocess.run([args.gen, "step-linear", trace], check=True)
            plain = os.path.join(tmp, "plain.html")
            subprocess.run([args.leakwatch, "report", "--format", "html",
                            "-o", plain, "step-linear.trace"], cwd=tmp,
                           check=True)
            shot = os.path.abspath(args.readme_screenshot)
            p = subprocess.run([chrome, *common, "--screenshot=" + shot,
                                "--window-size=1280,1000", "file://" + plain],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=120)
            if p.returncode != 0 or not os.path.exists(shot):
                failures.append("no README screenshot was taken")
    return conclude(failures)


if __name__ == "__main__":
    sys.exit(main())
