#!/usr/bin/env python3
"""Stand-in for `docker image inspect`: size estimated from the Dockerfile's shape."""
import re, sys
df = open("services/api/Dockerfile").read()
froms = re.findall(r"^FROM (\S+)", df, re.M)
final = froms[-1] if froms else ""
size = {"python:3.12": 1020, "python:3.12-slim": 155}.get(final, 1020)
if len(froms) == 1:
    size += 190  # build toolchain and pip cache left in the runtime image
if "--no-cache-dir" not in df:
    size += 60
print(f"image ~{size} MB (target < 300)")
sys.exit(0 if size < 300 else 1)
