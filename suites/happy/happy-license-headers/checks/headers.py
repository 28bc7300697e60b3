#!/usr/bin/env python3
"""Every hand-written .go file starts with the license header followed by its
original body (pinned by hash in checks/bodies.json, outside the workspace);
the generated file is byte for byte what the generator wrote; no new .go file."""
import hashlib, json, os, sys
HDR = "// Copyright 2026 Acme Corp.\n// SPDX-License-Identifier: Apache-2.0\n\n"
pinned = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "bodies.json")))
sha = lambda s: hashlib.sha256(s.encode()).hexdigest()
found = sorted(os.path.relpath(os.path.join(d, f)) for d, _, fs in os.walk(".") for f in fs if f.endswith(".go"))
bad = []
if found != sorted(pinned):
    bad.append(f"the .go files changed: {found}")
for p, want in sorted(pinned.items()):
    if not os.path.exists(p):
        continue
    text = open(p).read()
    if want.startswith("generated:"):
        if sha(text) != want.split(":", 1)[1]:
            bad.append(f"{p}: a generated file must not be edited")
    elif not text.startswith(HDR):
        bad.append(f"{p}: no license header")
    elif sha(text[len(HDR):]) != want:
        bad.append(f"{p}: the code after the header changed")
print("\n".join(bad) or f"{len(pinned) - 1} files carry the header; the generated file is untouched")
sys.exit(1 if bad else 0)
