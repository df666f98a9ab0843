#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The wheel as a user gets it: builds it with pip (meson-python), installs it
# into a fresh virtual environment outside the source tree, and runs, with
# nothing of the checkout on PATH or PYTHONPATH:
#  1. the demo (examples/train_leak on the stand-in runtime) through the
#     installed `leakwatch run`, whose JSON report must name the planted
#     loss by its line;
#  2. `python -m leakwatch`, the same command, and `man leakwatch`;
#  3. the pytest plugin, found through its entry point (no -p): one test
#     that keeps a tensor per run fails naming the line, the others pass;
#  4. real PyTorch on the stand-in GPU, where scripts/torch-env.sh and
#     scripts/fakegpu.sh exist (skipped otherwise, or when the PyTorch
#     environment cannot be made).
#   scripts/test-wheel.sh BUILD_DIR
# BUILD_DIR is a configured and built tree with the tests (the stand-in
# runtime, examples and tinytensor come from it; the wheel does not).
# PYTHON picks the interpreter (default python3). Prints the wheel's size.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -x "$1/examples/train_leak" ]; then
  echo "usage: test-wheel.sh BUILD_DIR (a built tree with the tests)" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "test-wheel: FAIL: $*" >&2; exit 1; }

echo "== building the wheel"
"$python" -m venv "$work/build-env"
"$work/build-env/bin/pip" install -q --disable-pip-version-check \
  meson-python meson ninja
"$work/build-env/bin/pip" wheel -q --disable-pip-version-check \
  --no-build-isolation --no-deps -w "$work/dist" "$here"
wheel=$(ls "$work/dist"/leakwatch-*.whl)
echo "test-wheel: $(basename "$wheel"), $(stat -c %s "$wheel") bytes"
case $wheel in *-py3-none-linux_*.whl) ;; *) fail "wheel tag: $wheel" ;; esac

echo "== installing it into a fresh virtual environment"
venv="$work/venv"
"$python" -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "$wheel"
if ! "$venv/bin/pip" install -q --disable-pip-version-check pytest 2>/dev/null; then
  # No index to install from: the interpreter's own pytest, if it has one.
  if "$python" -c 'import pytest' 2>/dev/null; then
    echo "test-wheel: pytest from $python's site-packages"
    rm -rf "$venv"
    "$python" -m venv --system-site-packages "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "$wheel"
  fi
fi
# Nothing from the checkout or the build tree.
run_clean() {
  env -u PYTHONPATH -u LEAKWATCH_LIB -u LEAKWATCH_CLI -u LD_PRELOAD \
    PATH="$venv/bin:/usr/local/bin:/usr/bin:/bin" "$@"
}
[ "$(run_clean sh -c 'command -v leakwatch')" = "$venv/bin/leakwatch" ] ||
  fail "leakwatch is not on the environment's PATH"

echo "== the demo through the installed command"
mkdir "$work/demo"
(cd "$work/demo" && run_clean leakwatch run --format json -o report.json -- \
  "$build/examples/train_leak" 50 >/dev/null) || fail "leakwatch run"
"$python" - "$work/demo/report.json" <<'EOF' || fail "the demo's report"
import json, sys
report = json.load(open(sys.argv[1]))
assert report["schema_version"] == 1, report.get("schema_version")
leak = report["findings"][0]
where = (leak["category"], leak["location"]["function"],
         leak["location"]["file"].rsplit("/", 1)[-1])
assert where == ("retained-loss", "forward_backward", "train_leak.c"), where
assert report["steps"] == 50 and report["live_count_at_exit"] == 50, report
print("test-wheel: demo: retained-loss at forward_backward, train_leak.c")
EOF
run_clean python -m leakwatch --version | grep -q '^leakwatch ' ||
  fail "python -m leakwatch --version"

echo "== the man page"
[ -s "$venv/share/man/man1/leakwatch.1" ] ||
  fail "no share/man/man1/leakwatch.1 in the environment"
grep -q '^\.TH LEAKWATCH 1' "$venv/share/man/man1/leakwatch.1" ||
  fail "share/man/man1/leakwatch.1 is not leakwatch(1)"
if command -v man >/dev/null; then
  # man finds it from PATH alone (bin/../share/man), as for a user.
  [ "$(run_clean env -u MANPATH man -w leakwatch)" = \
    "$venv/share/man/man1/leakwatch.1" ] ||
    fail "man -w leakwatch: $(run_clean env -u MANPATH man -w leakwatch 2>&1)"
fi
echo "test-wheel: man leakwatch: $venv/share/man/man1/leakwatch.1"

echo "== the pytest plugin, registered by the wheel"
if run_clean python -c 'import pytest' 2>/dev/null; then
  tests="$here/tests/pytest-plugin/test_gpu_loops.py"
  kept=$(grep -n '# @kept' "$tests" | cut -d: -f1)
  set +e
  out=$(cd "$work" && run_clean env LW_TINYTENSOR="$build/tests/tinytensor/libtinytensor.so" \
    PYTHONPATH="$here/tests/tinytensor" \
    python -m pytest -p no:cacheprovider -q -rA --leakwatch "$tests" 2>&1)
  status=$?
  set -e
  [ $status -eq 1 ] || fail "pytest exit $status, not 1: $out"
  grep -q "^FAILED .*test_keeps_a_tensor_per_run" <<<"$out" || fail "no failure: $out"
  grep -q "test_gpu_loops.py:$kept" <<<"$out" || fail "line $kept not named: $out"
  [ "$(grep -c '^PASSED ' <<<"$out")" -ge 4 ] || fail "the others: $out"
  echo "test-wheel: pytest --leakwatch: the kept tensor fails at line $kept"
else
  echo "test-wheel: no pytest to install: the plugin is not run"
fi

echo "== real PyTorch on the stand-in GPU"
if [ -x "$here/scripts/torch-env.sh" ] && [ -x "$here/scripts/fakegpu.sh" ]; then
  if torch_python=$("$here/scripts/torch-env.sh" | tail -n 1); then
    cat >"$work/train.py" <<'EOF'
import torch
model = torch.nn.Linear(256, 256).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
losses = []
for _ in range(40):
    loss = model(torch.randn(64, 256, device="cuda")).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    losses.append(loss)  # @kept: the graph's output, one per step
EOF
    (cd "$work" && run_clean env LEAKWATCH_BUILD="$build" \
      leakwatch run --format json -o torch.json -- \
      "$here/scripts/fakegpu.sh" "$torch_python" train.py) || fail "torch run"
    "$python" - "$work/torch.json" <<'EOF' || fail "the PyTorch report"
import json, sys
doc = json.load(open(sys.argv[1]))
reports = doc.get("reports", [doc])
grow = [f for r in reports for f in r["findings"] if f["leak"]
        and (f["location"] or {}).get("file", "").endswith("train.py")]
assert grow, [r["findings"] for r in reports]
assert all(r["step_source"] == "optimizer" for r in reports if r["steps"])
print("test-wheel: torch:", grow[0]["category"], "at train.py:%s" % grow[0]["location"]["line"])
EOF
  else
    echo "test-wheel: no PyTorch environment could be made: skipped"
  fi
else
  echo "test-wheel: scripts/torch-env.sh or fakegpu.sh missing: skipped"
fi
echo "test-wheel: ok"
