#!/bin/sh
fail=0
grep -qF 'RETRY_BUDGET = 3' src/budget.py || { echo "src/budget.py: not fixed"; fail=1; }
exit $fail
