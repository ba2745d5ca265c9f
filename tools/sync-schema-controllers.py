#!/usr/bin/python3
"""Rewrites the control section of policies/schema/policy.schema.json from
the controller registry (`govctl lint --controllers`), so the schema's
controller names and parameter ranges cannot drift from the code
(tests/integration/policy_schema.sh checks they agree).
usage: tools/sync-schema-controllers.py BUILD_DIR"""
import collections
import json
import subprocess
import sys

build = sys.argv[1] if len(sys.argv) > 1 else "build"
reg = json.loads(subprocess.run([build + "/govctl", "lint", "--controllers"], check=True,
                                capture_output=True, text=True).stdout,
                 object_pairs_hook=collections.OrderedDict)
path = "policies/schema/policy.schema.json"
schema = json.load(open(path), object_pairs_hook=collections.OrderedDict)
ctl = schema["properties"]["control"]
ctl["properties"]["controller"]["anyOf"][0]["enum"] = list(reg.keys())
rules = []
for name, c in reg.items():
    props = collections.OrderedDict()
    for k, v in sorted(c["params"].items()):
        d = collections.OrderedDict([("type", "number"), ("minimum", v["min"]),
                                     ("maximum", v["max"]), ("description", v["doc"])])
        if v["default"] is not None:
            d["default"] = v["default"]
        props[k] = d
    params = collections.OrderedDict([("type", "object"), ("additionalProperties", False),
                                      ("properties", props)])
    if not props:
        params["maxProperties"] = 0
    rules.append(collections.OrderedDict([
        ("if", {"properties": {"controller": {"const": name}}, "required": ["controller"]}),
        ("then", {"properties": {"params": params}})]))
ctl["allOf"] = rules
with open(path, "w") as f:
    f.write(json.dumps(schema, indent=2) + "\n")
