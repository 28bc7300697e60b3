#!/usr/bin/env python3
# 3.10 is the minimum everywhere and no file still names 3.8 or 3.9.
import re, sys, tomllib
bad = []
meta = tomllib.load(open("pyproject.toml", "rb"))
if meta["project"].get("requires-python") != ">=3.10":
    bad.append(f"requires-python is {meta['project'].get('requires-python')!r}")
versions = sorted(c.rsplit(":: ", 1)[1] for c in meta["project"]["classifiers"] if re.search(r"Python :: 3\.\d+$", c))
if versions != ["3.10", "3.11", "3.12"]:
    bad.append(f"classifiers list {versions}")
if meta["tool"]["ruff"].get("target-version") != "py310":
    bad.append("ruff target-version is not py310")
for f in ("pyproject.toml", ".github/workflows/ci.yml", "tox.ini", "README.md"):
    text = open(f).read()
    for old in re.findall(r"\b3\.[89]\b(?!\d)|\bpy3[89]\b", text):
        bad.append(f"{f} still names {old}")
if "Python 3.10 or later" not in open("README.md").read():
    bad.append("README does not say Python 3.10 or later")
print("\n".join(bad) or "minimum Python 3.10 everywhere")
sys.exit(1 if bad else 0)
