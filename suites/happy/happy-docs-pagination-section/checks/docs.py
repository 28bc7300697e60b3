#!/usr/bin/env python3
import re, sys
ns = {}
exec(open("src/routes.py").read(), ns)
doc = open("docs/api.md").read()
missing = [f"{m} {p}" for m, p in ns["ROUTES"] if f"### {m} {p}" not in doc]
if "## Pagination" not in doc:
    missing.append("## Pagination section")
elif not all(w in doc for w in ("cursor", "limit", "200", "next_cursor")):
    missing.append("pagination section must name cursor, limit (max 200) and next_cursor")
print("missing: " + ", ".join(missing) if missing else "docs complete")
sys.exit(1 if missing else 0)
