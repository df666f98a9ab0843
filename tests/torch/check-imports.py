#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The stand-in GPU exports every function that the installed PyTorch
imports from the libraries it stands in for.

    check-imports.py TORCH_PYTHON gen-stubs.py torch-imports.txt"""
import subprocess
import sys

python, gen, imports = sys.argv[1:4]
# Found, not imported: importing needs the stand-in libraries.
lib = subprocess.run([python, "-c", "import importlib.util, os; print(os.path."
                      "join(importlib.util.find_spec('torch')."
                      "submodule_search_locations[0], 'lib'))"],
                     capture_output=True, text=True)
if lib.returncode != 0:
    print(f"{python} has no torch:\n{lib.stderr}", file=sys.stderr)
    sys.exit(1)
sys.exit(subprocess.run([sys.executable, gen, "check", lib.stdout.strip(),
                         imports]).returncode)
