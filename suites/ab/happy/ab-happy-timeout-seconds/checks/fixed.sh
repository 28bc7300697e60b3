#!/bin/sh
fail=0
grep -qF 'TIMEOUT = 5  # seconds' src/http.py || { echo "src/http.py: not fixed"; fail=1; }
exit $fail
