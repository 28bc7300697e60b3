#!/usr/bin/env python3
"""Write the suite cases (happy, edge, adversarial, regression) from the
compact descriptions in cases_*.py, then compile every cassette with
`bench script`.

    python3 suites/gen/gen.py                 # all cases
    python3 suites/gen/gen.py edge-time-limit # only the named case(s)

A case directory is data: once written it stands on its own (bench run reads
only the directory). This generator is how the directories were written; if
you edit a case by hand, edit its description here too or it will be
overwritten on the next full regeneration.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cases_adversarial
import cases_bounds
import cases_edge
import cases_happy
import cases_happy_a
import cases_h_promises
import cases_memory
import cases_reach
import cases_regression
import cases_h_stop
from lib import ROOT


def all_cases():
    out = []
    for mod in (cases_happy, cases_happy_a, cases_edge, cases_adversarial, cases_regression, cases_reach, cases_memory, cases_bounds,
                cases_h_promises, cases_h_stop):
        out.extend(mod.cases())
    ids = [c.id for c in out]
    dup = {i for i in ids if ids.count(i) > 1}
    assert not dup, f"duplicate case ids: {dup}"
    return out


def main():
    only = set(sys.argv[1:])
    cases = [c for c in all_cases() if not only or c.id in only]
    if only and len(cases) != len(only):
        missing = only - {c.id for c in cases}
        sys.exit(f"no such case(s): {', '.join(sorted(missing))}")
    # The release build: the one .ci/run and every script use (a debug
    # build would compile the whole tree a second time).
    subprocess.run(["cargo", "build", "-q", "--release", "-p", "bench"], cwd=ROOT, check=True)
    bench = os.path.join(ROOT, "target", "release", "bench")
    dirs = []
    for c in cases:
        d = c.write()
        dirs.append(d)
    r = subprocess.run([bench, "script", *dirs], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(r.stderr)
    print(f"wrote {len(dirs)} case(s)")


if __name__ == "__main__":
    main()
