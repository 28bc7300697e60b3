#!/usr/bin/env python3
# Every relative markdown link under docs/ names an existing file, and its
# #anchor (if any) a heading of that file (GitHub's slugs).
import glob, os, re, sys

def slugs(path):
    out = set()
    for line in open(path):
        m = re.match(r"#+\s+(.*)", line)
        if m:
            out.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return out

bad = []
files = sorted(glob.glob("docs/**/*.md", recursive=True))
for md in files:
    for target in re.findall(r"\]\(([^)\s]+)\)", open(md).read()):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
        if not os.path.isfile(dest):
            bad.append(f"{md}: {target}: no file {dest}")
        elif anchor and anchor not in slugs(dest):
            bad.append(f"{md}: {target}: no heading #{anchor} in {dest}")
if len(files) < 4:
    bad.append(f"docs lost files: {files}")
print("\n".join(bad) or f"{len(files)} files, every link resolves")
sys.exit(1 if bad else 0)
