# SPDX-License-Identifier: MIT
"""What the Python test scripts share: checks that collect failures rather
than stop at the first, and the exit statuses meson reads (0 passed, 1
failed, 77 skipped).

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from lwcheck import check, failures, finish
"""
import sys

SKIP = 77

# Every failure of the running script, in order.
failures = []


def check(cond, what):
    """Records what as a failure, and prints it, when cond is false;
    returns cond."""
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return cond


def fail(what):
    """Records what as a failure."""
    check(False, what)


def check_eq(actual, expected, what):
    return check(actual == expected,
                 "%s: got %r, expected %r" % (what, actual, expected))


def finish(passed="ok"):
    """The exit status of the script: 1 after any failure (their count is
    printed), else 0 (and passed is printed)."""
    if failures:
        print("%d failure%s" % (len(failures), "" if len(failures) == 1
                                 else "s"))
        return 1
    print(passed)
    return 0


def conclude(found, passed="ok"):
    """For a script that gathers its own list of failures: prints each,
    and returns the exit status (1 after any, else 0, passed printed)."""
    for what in found:
        print("FAIL:", what)
    if found:
        return 1
    print(passed)
    return 0


def skip(why):
    """Ends the script as skipped, saying why."""
    print(why + ": skipped")
    sys.exit(SKIP)
