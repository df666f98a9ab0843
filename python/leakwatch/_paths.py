# SPDX-License-Identifier: MIT
"""Where the leakwatch command and shim are: installed by pip beside this
module's distribution, or built in the source tree's build/ directory.

pip installs the wheel's command into the environment's scripts directory
and the shim under its data directory (share/leakwatch/), wherever the
installation scheme puts those (a virtual environment, --user, a system
prefix); the distribution's RECORD lists them relative to site-packages,
so they are found from there whatever the scheme.
"""
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def _installed(suffix):
    try:
        from importlib import metadata
        files = metadata.distribution("leakwatch").files or []
    except Exception:  # not installed, or no metadata
        return None
    for f in files:
        if f.as_posix().endswith(suffix):
            path = os.path.abspath(str(f.locate()))
            if os.path.exists(path):
                return path
    return None


def _built(*parts):
    # python/leakwatch/ in a source checkout: build/ beside python/.
    path = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "build",
                        *parts)
    return path if os.path.exists(path) else None


def library():
    """The shim, libleakwatch.so: $LEAKWATCH_LIB, else the installed one,
    else the source tree's build; None when there is none."""
    return (os.environ.get("LEAKWATCH_LIB") or
            _installed("share/leakwatch/libleakwatch.so") or
            _built("interpose", "libleakwatch.so"))


def command():
    """The leakwatch command: $LEAKWATCH_CLI, else the installed one, else
    the source tree's build; None when there is none."""
    return (os.environ.get("LEAKWATCH_CLI") or
            _installed("bin/leakwatch") or
            _built("report", "leakwatch"))
