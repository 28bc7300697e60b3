#!/usr/bin/env python3
import re, sys
def ver(path):
    m = re.search(r"^requests==([0-9.]+)$", open(path).read(), re.M)
    return tuple(int(x) for x in m.group(1).split(".")) if m else None
bad = [p for p in ("requirements.txt", "requirements.lock") if (ver(p) or (0,)) < (2, 32, 3)]
if "CVE-2024-35195" not in open("CHANGELOG.md").read():
    bad.append("CHANGELOG.md does not mention CVE-2024-35195")
print("not yet: " + ", ".join(bad) if bad else "requests pinned >= 2.32.3 everywhere")
sys.exit(1 if bad else 0)
