#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Creates, or reuses, a virtual environment outside the source tree with the
# real PyTorch CUDA build, the training libraries the torch suite's programs
# use (transformers, accelerate, Lightning, torchmetrics) and only what
# importing them needs, and prints the path of its python3 on the last line.
#   scripts/torch-env.sh
# LEAKWATCH_TORCH_ENV  where the environment lives
#                      (default ${XDG_CACHE_HOME:-~/.cache}/leakwatch/torch-VERSION-libs:
#                      its own name, so that an environment of torch alone,
#                      from an older checkout, is neither used nor replaced)
#
# The NVIDIA wheels that PyTorch names (cuda-toolkit, cuDNN, NCCL, NVSHMEM,
# cuSPARSELt, Triton...) are left out: on a machine without a GPU the CUDA
# toolkit's libraries and the stand-in GPU (scripts/fakegpu.sh) satisfy
# every library PyTorch loads, and on a GPU machine the toolkit does.
# Everything is installed without the dependencies it declares, from the
# pinned lists below, so that nothing pulls an NVIDIA wheel or a second torch;
# an environment made from other lists is made anew.
set -euo pipefail

torch_version=2.15.0
# Pure-Python packages `import torch` imports, at versions it accepts.
deps=(filelock==4.2.12 typing-extensions==4.16.0 sympy==1.14.0 mpmath==1.3.0
      networkx==3.6.1 jinja2==3.1.6 MarkupSafe==3.0.4 fsspec==2026.9.0)
# The training libraries (each accepts torch 2.15), and what importing them
# and training with them imports, at versions they accept. Left out: what
# only their command-line tools (click, typer) and downloads from the Hub
# (hf-xet) need.
libraries=(transformers==5.24.0 accelerate==1.15.0 lightning==2.6.6
           torchmetrics==1.9.0)
library_deps=(numpy==2.4.6 packaging==26.4 pyyaml==6.0.4 tqdm==4.70.1
              regex==2026.11.19 safetensors==0.8.0 tokenizers==0.23.3
              huggingface-hub==2.4.0 httpx2==2.16.2 httpcore2==2.16.2
              h11==0.16.0 anyio==4.16.0 idna==3.20 truststore==0.10.5
              psutil==7.2.2 lightning-utilities==0.15.3)

env=${LEAKWATCH_TORCH_ENV:-${XDG_CACHE_HOME:-$HOME/.cache}/leakwatch/torch-$torch_version-libs}
stamp="$env/.leakwatch-torch"
want="torch==$torch_version ${deps[*]} ${libraries[*]} ${library_deps[*]}"

if [ -x "$env/bin/python3" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "torch-env: reusing $env" >&2
  echo "$env/bin/python3"
  exit 0
fi

python=${PYTHON:-python3}
start=$(date +%s)
echo "torch-env: creating $env (torch $torch_version and ${libraries[*]}, no NVIDIA wheels)" >&2
rm -rf "$env"
mkdir -p "$(dirname "$env")"
"$python" -m venv "$env"
"$env/bin/python3" -m pip install --quiet --disable-pip-version-check --no-deps \
  "torch==$torch_version" "${deps[@]}" "${libraries[@]}" "${library_deps[@]}" >&2
echo "$want" >"$stamp"
size=$(du -sh "$env" | cut -f1)
echo "torch-env: ready in $(( $(date +%s) - start )) s, $size on disk" >&2
echo "$env/bin/python3"
