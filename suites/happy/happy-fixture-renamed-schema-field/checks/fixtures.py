#!/usr/bin/env python3
"""Every user fixture validates against schemas/user.schema.json (required
keys, no unknown key, JSON types) and still holds the same user: the pinned
copy in checks/users_expected.json, outside the workspace."""
import json, os, sys
TYPES = {"integer": int, "string": str, "array": list, "object": dict}
schema = json.load(open("schemas/user.schema.json"))
expected = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "users_expected.json")))
bad = []
for name, want in sorted(expected.items()):
    path = "tests/fixtures/users/" + name
    try:
        doc = json.load(open(path))
    except (OSError, ValueError) as e:
        bad.append(f"{path}: {e}")
        continue
    for k in schema["required"]:
        if k not in doc:
            bad.append(f"{path}: missing required {k}")
    for k, v in doc.items():
        spec = schema["properties"].get(k)
        if spec is None:
            bad.append(f"{path}: unknown field {k}")
        elif not isinstance(v, TYPES[spec["type"]]) or isinstance(v, bool):
            bad.append(f"{path}: {k} is not {spec['type']}")
    if doc != want:
        bad.append(f"{path}: the user's data changed, not just the field name")
print("\n".join(bad) or "3 fixtures match the v3 user schema")
sys.exit(1 if bad else 0)
