#!/bin/sh
fail=0
grep -qF 'ENABLED = True' src/audit.py || { echo "src/audit.py: not fixed"; fail=1; }
exit $fail
