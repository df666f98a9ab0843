# SPDX-License-Identifier: MIT
"""python -m leakwatch ARGS...: the leakwatch command, for environments
whose scripts directory is not on PATH (`python -m leakwatch run --
python train.py`)."""
import os
import sys

from leakwatch._paths import command


def main():
    cli = command()
    if not cli:
        sys.stderr.write("leakwatch: the leakwatch command is not installed "
                         "(pip install leakwatch, or set LEAKWATCH_CLI)\n")
        return 2
    os.execv(cli, [cli, *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
