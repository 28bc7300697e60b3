#!/usr/bin/env python3
"""Stand-in for `vite build` + gzip size of the main chunk, from what is imported eagerly."""
import json, re, sys
deps = json.load(open("package.json"))["dependencies"]
app = open("src/App.jsx").read()
size = 150                                   # react + react-dom + app code
if "moment" in deps or "from 'moment'" in open("src/format.js").read():
    size += 72
elif "date-fns" in deps:
    size += 6
if re.search(r"^import Charts from", app, re.M):
    size += 96                               # chart.js in the main chunk
print(f"main chunk ~{size} KB gzip (target < 250)")
sys.exit(0 if size < 250 else 1)
