#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Creates, or reuses, a virtual environment outside the source tree with the
# real PyTorch CUDA build and only what `import torch` needs, and prints the
# path of its python3 on the last line.
#   scripts/torch-env.sh
# LEAKWATCH_TORCH_ENV  where the environment lives
#                      (default ${XDG_CACHE_HOME:-~/.cache}/leakwatch/torch-VERSION)
#
# The NVIDIA wheels that PyTorch names (cuda-toolkit, cuDNN, NCCL, NVSHMEM,
# cuSPARSELt, Triton...) are left out: on a machine without a GPU the CUDA
# toolkit's libraries and the stand-in GPU (scripts/fakegpu.sh) satisfy
# every library PyTorch loads, and on a GPU machine the toolkit does.
set -euo pipefail

torch_version=2.15.0
# Pure-Python packages `import torch` imports, at versions it accepts.
deps=(filelock==4.2.12 typing-extensions==4.16.0 sympy==1.14.0 mpmath==1.3.0
      networkx==3.6.1 jinja2==3.1.6 MarkupSafe==3.0.4 fsspec==2026.9.0)

env=${LEAKWATCH_TORCH_ENV:-${XDG_CACHE_HOME:-$HOME/.cache}/leakwatch/torch-$torch_version}
stamp="$env/.leakwatch-torch"
want="torch==$torch_version ${deps[*]}"

if [ -x "$env/bin/python3" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "torch-env: reusing $env" >&2
  echo "$env/bin/python3"
  exit 0
fi

python=${PYTHON:-python3}
start=$(date +%s)
echo "torch-env: creating $env (torch $torch_version, no NVIDIA wheels)" >&2
rm -rf "$env"
mkdir -p "$(dirname "$env")"
"$python" -m venv "$env"
"$env/bin/python3" -m pip install --quiet --disable-pip-version-check --no-deps \
  "torch==$torch_version" "${deps[@]}" >&2
echo "$want" >"$stamp"
size=$(du -sh "$env" | cut -f1)
echo "torch-env: ready in $(( $(date +%s) - start )) s, $size on disk" >&2
echo "$env/bin/python3"
