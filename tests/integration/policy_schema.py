#!/usr/bin/python3
"""Validates policy YAML files against policies/schema/policy.schema.json
(JSON Schema draft 2020-12) the way an editor's YAML language server does:
YAML 1.1 (PyYAML) -> JSON -> schema. Prints one line per file: 'ok FILE' or
'invalid FILE: reason'. Exit 0 when all were read (valid or not), 2 on usage.
With --controllers FILE (govctl lint --controllers output) it instead checks
that the schema's controller names and parameter ranges match the registry."""
import json
import sys

import jsonschema
import yaml

SCHEMA = "policies/schema/policy.schema.json"


def load_schema():
    with open(SCHEMA) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def validate(validator, path):
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except yaml.YAMLError as e:
        return "not YAML: " + str(e).splitlines()[0]
    errs = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    if errs:
        e = errs[0]
        return "%s: %s" % ("/".join(str(p) for p in e.path) or "(root)", e.message)
    return None


def check_controllers(schema, reg_path):
    with open(reg_path) as f:
        reg = json.load(f)
    ctl = schema["properties"]["control"]
    names = ctl["properties"]["controller"]["anyOf"][0]["enum"]
    problems = []
    if sorted(names) != sorted(reg):
        problems.append("schema controllers %s != registry %s" % (sorted(names), sorted(reg)))
    seen = {}
    for rule in ctl.get("allOf", []):
        name = rule["if"]["properties"]["controller"]["const"]
        seen[name] = rule["then"]["properties"]["params"].get("properties", {})
    for name, c in reg.items():
        sp = seen.get(name)
        if sp is None:
            problems.append("schema has no params rule for controller %s" % name)
            continue
        if sorted(sp) != sorted(c["params"]):
            problems.append("%s params: schema %s != registry %s" % (name, sorted(sp), sorted(c["params"])))
            continue
        for k, v in c["params"].items():
            if sp[k].get("minimum") != v["min"] or sp[k].get("maximum") != v["max"]:
                problems.append("%s.%s range: schema %s..%s != registry %s..%s" % (
                    name, k, sp[k].get("minimum"), sp[k].get("maximum"), v["min"], v["max"]))
    for p in problems:
        print(p)
    return 1 if problems else 0


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    schema = load_schema()
    if argv[1] == "--controllers":
        return check_controllers(schema, argv[2])
    validator = jsonschema.Draft202012Validator(schema)
    for path in argv[1:]:
        why = validate(validator, path)
        print("ok %s" % path if why is None else "invalid %s: %s" % (path, why))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
