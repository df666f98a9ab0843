#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The framework's frames folded: the trace gen-framework writes (a Python
program's stacks through stand-ins of PyTorch's libraries, see its comment)
read in every view.

  - text: each run of the framework's frames is one line naming the
    operator ("aten::mul_Tensor  (6 framework frames)") under the Python
    frame that called it; the program's own native frame between two runs
    stays; a backward run is named by its autograd node too; a run that
    names no operator by its library. --native shows every frame;
    --frames N limits native frames, never Python ones.
  - JSON: every frame stays, the folded ones marked with their run's name
    in "folded" (null under --native).
  - folded (flame graphs) and HTML: one frame per run, by its name.

    test-frames.py --leakwatch PATH --gen PATH [--libdw 0|1]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import SKIP, check, check_eq, finish  # noqa: E402

MUL = "aten::mul_Tensor"
BACKWARD = "MulBackward0: aten::mul_Tensor"
TORCH = "/home/user/venv/lib/python3.11/site-packages/torch/autograd/__init__.py"
LEAD = "       "

# Each site's stack as the text report shows it by default.
STACKS = {
    "step  train.py:7": [
        MUL + "  (6 framework frames)",
        "... 1 interpreter frame",
        "step  train.py:7",
        "main  train.py:12",
        "<module>  train.py:15",
        "... 2 start-up frames",
    ],
    "step  train.py:8": [
        "aten::empty_strided  (2 framework frames)",
        "myops.so+0x100",
        MUL + "  (2 framework frames)",
        "... 1 interpreter frame",
        "step  train.py:8",
        "main  train.py:12",
        "<module>  train.py:15",
        "... 2 start-up frames",
    ],
    "step  train.py:9": [
        BACKWARD + "  (5 framework frames)",
        "... 1 start-up frame",
        "backward  " + TORCH + ":388",
        "step  train.py:9",
        "main  train.py:12",
        "<module>  train.py:15",
    ],
    "step  train.py:10": [
        "libc10_cuda.so  (2 framework frames)",
        "... 1 interpreter frame",
        "step  train.py:10",
        "main  train.py:12",
        "<module>  train.py:15",
        "... 2 start-up frames",
    ],
}

# The functions of the framework's stand-ins, as --native names them.
FUNCTIONS = [
    "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(unsigned long)",
    "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)",
    "c10::impl::wrap_kernel_functor_unboxed_::call(int)",
    "at::_ops::mul_Tensor::redispatch(int)",
    "at::_ops::mul_Tensor::call(int)",
    "at::_ops::empty_strided::call(int)",
    "torch::autograd::THPVariable_mul(int)",
    "torch::autograd::generated::MulBackward0::apply(int)",
    "torch::autograd::Engine::thread_main(int)",
]

# "folded" of each site's JSON frames, in order (Python frames: None).
MARKS = {
    7: [MUL] * 6 + ["interpreter", None, None, None] + ["start-up"] * 2,
    8: ["aten::empty_strided"] * 2 + [None] + [MUL] * 2 +
       ["interpreter", None, None, None] + ["start-up"] * 2,
    # Attributed to the call of backward(): its Python frames first.
    9: [None] * 4 + [BACKWARD] * 5 + ["start-up"],
    10: ["libc10_cuda.so"] * 2 + ["interpreter", None, None, None] +
        ["start-up"] * 2,
}


def leakwatch(args, tmp, *argv):
    r = subprocess.run([args.leakwatch, *argv], cwd=tmp, capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 0, f"{argv}: exit status {r.returncode}: "
          f"{r.stderr}")
    return r.stdout


def stacks(text):
    """Each site's stack lines (without their lead), by location line."""
    out, current = {}, None
    for line in text.splitlines():
        if line.startswith("    at ") or line.startswith("    in backward"):
            current = line.split(" called from ")[-1].replace("    at ", "")
            out[current] = []
        elif current is not None and line.startswith(LEAD):
            out[current].append(line[len(LEAD):])
        else:
            current = None
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--leakwatch", required=True)
    p.add_argument("--gen", required=True)
    p.add_argument("--libdw", default="1")
    args = p.parse_args()
    if args.libdw != "1":
        print("no libdw: the stand-ins' functions are not named: skipped")
        return SKIP
    args.leakwatch = os.path.abspath(args.leakwatch)
    with tempfile.TemporaryDirectory(prefix="lw-frames-") as tmp:
        subprocess.run([os.path.abspath(args.gen), "fw.trace"], cwd=tmp,
                       check=True)

        text = leakwatch(args, tmp, "report", "fw.trace")
        check_eq(stacks(text), STACKS, "the default text's stacks")
        for name in ("wrap_kernel_functor", "at::_ops::", "CachingAllocator"):
            check(name not in text, f"default text shows {name}")

        native = leakwatch(args, tmp, "report", "--native", "--frames", "0",
                           "fw.trace")
        for fn in FUNCTIONS:
            check(fn in native, f"--native lacks {fn}")
        check("framework frame" not in native and "... " not in
              "".join(line for line in native.splitlines()
                      if line.startswith(LEAD)),
              "--native folds frames")

        # --frames: at most N native frames, every Python frame.
        cut = stacks(leakwatch(args, tmp, "report", "--native", "--frames",
                               "2", "fw.trace"))
        for where, lines in cut.items():
            shown = [x for x in lines if not x.startswith("... ")
                     and ".py:" not in x and "train.py" not in x]
            check(len(shown) <= 2, f"--frames 2 at {where}: {len(shown)} "
                  f"native frames shown: {lines}")
            python = [x for x in STACKS[where] if "train.py" in x or
                      ".py:" in x]
            check_eq([x for x in lines if x in python], python,
                     f"--frames 2 at {where}: the Python frames")
            more = sum(int(m.group(1)) for m in
                       (re.match(r"\.\.\. (\d+) more frames?$", x)
                        for x in lines) if m)
            check(more > 0, f"--frames 2 at {where}: nothing counted as "
                  f"left out: {lines}")
        check_eq(cut["step  train.py:7"][2], "... 5 more frames",
                 "--frames 2: the frames left out before the Python ones")

        doc = json.loads(leakwatch(args, tmp, "report", "--format", "json",
                                   "fw.trace"))
        for site in doc["sites"]:
            line = site["location"]["line"]
            check_eq([f["folded"] for f in site["frames"]], MARKS.get(line),
                     f"JSON \"folded\" of the frames of line {line}")
            check(site["location"]["folded"] is None,
                  f"line {line}: the location is folded")
        doc = json.loads(leakwatch(args, tmp, "report", "--format", "json",
                                   "--native", "fw.trace"))
        check(all(f["folded"] is None for s in doc["sites"]
                  for f in s["frames"]), "--native JSON marks folded frames")

        folded = leakwatch(args, tmp, "report", "--format", "folded",
                           "fw.trace").splitlines()
        check_eq(sorted(folded), sorted([
            f"<module> (train.py:15);main (train.py:12);step (train.py:7);{MUL} 4096",
            "<module> (train.py:15);main (train.py:12);step (train.py:8);"
            f"{MUL};myops.so+0x100;aten::empty_strided 2048",
            "<module> (train.py:15);main (train.py:12);step (train.py:9);"
            f"backward ({TORCH}:388);{BACKWARD} 1024",
            "<module> (train.py:15);main (train.py:12);step (train.py:10);"
            "libc10_cuda.so 512",
        ]), "folded stacks")

        page = leakwatch(args, tmp, "report", "--format", "html", "fw.trace")
        data = re.search(r'<script type="application/json" class="lw-data">'
                         r'(.*?)</script>', page, re.S)
        labels = set()

        def walk(node):
            labels.add(node["n"])
            for c in node["c"]:
                walk(c)
        if check(data, "the HTML page has no data"):
            walk(json.loads(data.group(1))["flame"])
        for want in (MUL, BACKWARD, "aten::empty_strided", "libc10_cuda.so"):
            check(want in labels, f"the icicle has no {want}: {labels}")
        check(not any("wrap_kernel_functor" in x or "at::_ops::" in x
                      for x in labels), f"the icicle shows the framework's "
              f"frames: {labels}")
        native = leakwatch(args, tmp, "report", "--format", "html",
                           "--native", "fw.trace")
        check("at::_ops::mul_Tensor::call" in native,
              "--native HTML lacks the framework's frames")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
