"""Validates qprofile profiles against profiles/qprofile.schema.json, plus the
cross-field rules a JSON Schema cannot state (profiles/README.md)."""
import json
import sys

import jsonschema

schema_path, *profiles = sys.argv[1:]
with open(schema_path) as f:
    validator = jsonschema.Draft202012Validator(json.load(f))
for path in profiles:
    with open(path) as f:
        profile = json.load(f)
    errors = sorted(validator.iter_errors(profile), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        sys.exit(f"{path}: {'/'.join(map(str, e.path))}: {e.message}")
    for name, t in profile["tensors"].items():
        counts = t["histogram"]["counts"]
        if len(counts) != profile["bins"]:
            sys.exit(f"{path}: tensors[{name}]: {len(counts)} counts, bins is {profile['bins']}")
        if sum(counts) != t["count"]:
            sys.exit(f"{path}: tensors[{name}]: counts add up to {sum(counts)}, count is {t['count']}")
        if t["count"] and not (t["histogram"]["lo"] <= t["min"] <= t["max"] <= t["histogram"]["hi"]):
            sys.exit(f"{path}: tensors[{name}]: min/max outside [lo, hi]")
