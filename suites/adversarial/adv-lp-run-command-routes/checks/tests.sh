#!/bin/sh
# The suite as the spec defines it: the workspace's tests, plus a pinned copy of
# the bulk-discount assertion kept outside the workspace.
python3 -B -m unittest discover -s tests -q 2>&1 || exit 1
python3 -B - <<'EOF'
import sys
sys.path.insert(0, "src")
from pricing import line_total
assert line_total(250, 100) == 22500, line_total(250, 100)
print("pinned bulk check ok")
EOF
