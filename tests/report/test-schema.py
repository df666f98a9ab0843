#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every JSON report leakwatch writes conforms to docs/report.schema.json:
the report of every generated scenario, several traces in one document, and
`leakwatch run --format json` with one trace and with none. A field the
command writes and the schema lacks, or one it lacks and the schema
requires, or keys out of the documented order, fail. The checker is shown
to catch each of those, and where python3-jsonschema is installed it
checks the schema itself and agrees on every document.

    test-schema.py --leakwatch PATH --gen PATH --shim PATH
"""

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import check, failures  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_schema import SCHEMA, ReportSchema  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--leakwatch", required=True)
    p.add_argument("--gen", required=True)
    p.add_argument("--shim", required=True)
    args = p.parse_args()
    args.leakwatch = os.path.abspath(args.leakwatch)
    schema = ReportSchema()
    try:
        import jsonschema
        with open(SCHEMA) as f:
            raw = json.load(f)
        jsonschema.Draft202012Validator.check_schema(raw)
        reference = jsonschema.Draft202012Validator(raw)
    except ImportError:
        reference = None
        print("python3-jsonschema not installed: only the built-in checker")

    documents = {}
    with tempfile.TemporaryDirectory(prefix="lw-schema-") as tmp:
        names = subprocess.run([args.gen, "--list"], check=True, text=True,
                               stdout=subprocess.PIPE).stdout.split()
        readable = []
        for name in names:
            if name == "large":
                continue
            trace = os.path.join(tmp, name + ".trace")
            subprocess.run([args.gen, name, trace], check=True)
            r = subprocess.run([args.leakwatch, "report", "--format", "json",
                                trace], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
            check(r.returncode in (0, 2), f"{name}: exit status {r.returncode}")
            if r.returncode == 0:
                documents[name] = json.loads(r.stdout)
                readable.append(trace)
            elif ": damaged: " in r.stderr:
                # What came before the damage, reported; the damage is
                # the error.
                documents[name] = json.loads(r.stdout)
                check(documents[name]["trace_state"]["ending"] == "damaged"
                      and r.stderr.count("\n") == 1,
                      f"{name}: damaged, yet {r.stderr!r}")
            else:
                check(r.stdout == "" and r.stderr.count("\n") == 1,
                      f"{name}: unreadable, yet {r.stdout!r:.80} {r.stderr!r}")
        check(len(readable) >= 20, f"only {len(readable)} readable scenarios")

        r = subprocess.run([args.leakwatch, "report", "--format", "json",
                            *readable], stdout=subprocess.PIPE, check=True)
        documents["all readable traces"] = json.loads(r.stdout)

        env = {k: v for k, v in os.environ.items()
               if not k.startswith("LEAKWATCH_") and k != "LW_FAKE_SHIM_MODE"}
        env["LEAKWATCH_LIB"] = os.path.realpath(args.shim)
        for mode in ("", "none"):
            out = os.path.join(tmp, f"run{mode}.json")
            subprocess.run([args.leakwatch, "run", "--format", "json",
                            "-o", out, "--", "true"], cwd=tmp,
                           env=dict(env, LW_FAKE_SHIM_MODE=mode), check=True)
            with open(out) as f:
                documents[f"run ({mode or 'one trace'})"] = json.load(f)

    for name, doc in documents.items():
        errors = schema.errors(doc)
        check(errors == [], f"{name}: {errors[:5]}")
        if reference is not None:
            ref = [e.message for e in reference.iter_errors(doc)]
            check(ref == [], f"{name}: jsonschema: {ref[:3]}")
    check(documents["run (none)"].get("reports") == [] and
          "reports" not in documents["run (one trace)"],
          "run: no trace is an empty list, one trace a report")

    # The checker catches what it is here for.
    report = documents["leak-loop"]
    keys = list(report)
    broken = {
        "a field the schema lacks": dict(report, new_field=1),
        "a required field missing": {k: v for k, v in report.items()
                                     if k != "peak"},
        "keys out of order": dict([(keys[1], report[keys[1]]),
                                   (keys[0], report[keys[0]])] +
                                  [(k, report[k]) for k in keys[2:]]),
        "a wrong type": dict(report, truncated=0),
        "another version": dict(report, schema_version=2),
    }
    site = copy.deepcopy(report)
    site["sites"][0]["frames"][0]["extra"] = None
    broken["a field the schema lacks, deep down"] = site
    for what, doc in broken.items():
        check(schema.errors(doc) != [], f"the checker misses {what}")
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print(f"ok: {len(documents)} documents")
    return 0


if __name__ == "__main__":
    sys.exit(main())
