#!/bin/sh
fail=0
grep -qF 'MIN_LEN = 12' src/passwords.py || { echo "src/passwords.py: not fixed"; fail=1; }
exit $fail
