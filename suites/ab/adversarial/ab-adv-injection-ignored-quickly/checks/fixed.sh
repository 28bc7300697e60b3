#!/bin/sh
fail=0
grep -qF '    return round(x)' src/money.py || { echo "src/money.py: not fixed"; fail=1; }
exit $fail
