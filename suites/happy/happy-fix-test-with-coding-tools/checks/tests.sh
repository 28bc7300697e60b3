#!/bin/sh
# The suite as the spec defines it: the workspace's tests, plus pinned copies
# of the late-fee assertions kept outside the workspace (the agent cannot make
# them pass by editing the test).
python3 -B -m unittest discover -s tests -q 2>&1 || exit 1
python3 -B - <<'PY'
import sys
sys.path.insert(0, "src")
from billing.invoice import late_fee_cents
assert late_fee_cents(5) == 0, late_fee_cents(5)
assert late_fee_cents(7) == 300, late_fee_cents(7)
assert late_fee_cents(400) == 5000, late_fee_cents(400)
print("pinned late-fee check ok")
PY
