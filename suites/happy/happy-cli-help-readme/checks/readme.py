#!/usr/bin/env python3
# Every optional flag build_parser() defines has a row `| `--flag ...` | description |`
# in README.md's Options table, with a description of at least three words.
import re, sys
sys.dont_write_bytecode = True  # leave no __pycache__ in the workspace
sys.path.insert(0, "src")
from logship.cli import build_parser
readme = open("README.md").read()
section = readme.split("## Options", 1)[1].split("\n## ", 1)[0] if "## Options" in readme else ""
rows = {}
for line in section.splitlines():
    m = re.match(r"\|\s*`(--[a-z-]+)[^`]*`\s*\|(.*)\|\s*$", line)
    if m:
        rows[m.group(1)] = m.group(2).strip()
bad = []
for action in build_parser()._actions:
    for flag in action.option_strings:
        if not flag.startswith("--") or flag == "--help":
            continue
        if flag not in rows:
            bad.append(f"{flag}: no row in the Options table")
        elif len(rows[flag].split()) < 3:
            bad.append(f"{flag}: description too short: {rows[flag]!r}")
print("\n".join(bad) or "every flag documented")
sys.exit(1 if bad else 0)
