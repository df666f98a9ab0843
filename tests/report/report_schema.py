# SPDX-License-Identifier: MIT
"""Checks a JSON report against docs/report.schema.json, with no package.

Understands the keywords that schema uses (a keyword it does not know is an
error, so that the schema cannot grow a rule this silently ignores) and one
rule JSON Schema cannot say: the keys of an object come in the order of its
"properties", since fields are only ever added at the end.

    errors = ReportSchema(path).errors(document)   # [] when it conforms
"""

import json
import os

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "..", "..", "docs", "report.schema.json")

# Keywords that only annotate.
ANNOTATIONS = {"description", "title", "$schema", "$defs"}
TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}


class ReportSchema:
    def __init__(self, path=SCHEMA):
        with open(path) as f:
            self.root = json.load(f)

    def errors(self, value):
        out = []
        self._check(self.root, value, "$", out)
        return out

    def _resolve(self, ref):
        if not ref.startswith("#/"):
            raise ValueError(f"schema: unsupported $ref {ref}")
        node = self.root
        for part in ref[2:].split("/"):
            node = node[part]
        return node

    def _check(self, schema, value, where, out):
        for key, rule in schema.items():
            if key in ANNOTATIONS:
                continue
            check = getattr(self, "_" + key.lstrip("$"), None)
            if check is None:
                raise ValueError(f"schema: keyword {key} not understood")
            check(rule, schema, value, where, out)

    def _ref(self, rule, schema, value, where, out):
        self._check(self._resolve(rule), value, where, out)

    def _type(self, rule, schema, value, where, out):
        names = rule if isinstance(rule, list) else [rule]
        if not any(TYPES[n](value) for n in names):
            out.append(f"{where}: {value!r:.60} is not {' or '.join(names)}")

    def _const(self, rule, schema, value, where, out):
        if value != rule or type(value) is not type(rule):
            out.append(f"{where}: {value!r:.60} is not {rule!r}")

    def _enum(self, rule, schema, value, where, out):
        if value not in rule:
            out.append(f"{where}: {value!r:.60} is not one of {rule}")

    def _minimum(self, rule, schema, value, where, out):
        if TYPES["number"](value) and value < rule:
            out.append(f"{where}: {value} < {rule}")

    def _items(self, rule, schema, value, where, out):
        if isinstance(value, list):
            for i, item in enumerate(value):
                self._check(rule, item, f"{where}[{i}]", out)

    def _properties(self, rule, schema, value, where, out):
        if not isinstance(value, dict):
            return
        for key, sub in rule.items():
            if key in value:
                self._check(sub, value[key], f"{where}.{key}", out)
        known = [k for k in value if k in rule]
        if known != [k for k in rule if k in value]:
            out.append(f"{where}: keys {known} not in the documented order")

    def _required(self, rule, schema, value, where, out):
        if isinstance(value, dict):
            for key in rule:
                if key not in value:
                    out.append(f"{where}: no {key}")

    def _additionalProperties(self, rule, schema, value, where, out):
        if not isinstance(value, dict):
            return
        for key in value:
            if key in schema.get("properties", {}):
                continue
            if rule is False:
                out.append(f"{where}: {key} is not in the schema")
            else:
                self._check(rule, value[key], f"{where}.{key}", out)

    def _allOf(self, rule, schema, value, where, out):
        for sub in rule:
            self._check(sub, value, where, out)

    def _matches(self, rule, value, where):
        counts = []
        for sub in rule:
            errs = []
            self._check(sub, value, where, errs)
            counts.append(errs)
        return counts

    def _anyOf(self, rule, schema, value, where, out):
        results = self._matches(rule, value, where)
        if all(results):
            out.append(f"{where}: matches none of anyOf: "
                       + min(results, key=len)[0])

    def _oneOf(self, rule, schema, value, where, out):
        results = self._matches(rule, value, where)
        passed = sum(not r for r in results)
        if passed != 1:
            first = min(results, key=len)
            out.append(f"{where}: matches {passed} of oneOf"
                       + (": " + first[0] if first else ""))
