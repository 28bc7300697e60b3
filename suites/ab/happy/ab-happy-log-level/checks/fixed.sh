#!/bin/sh
fail=0
grep -qF 'LEVEL = '\''INFO'\''' src/worker.py || { echo "src/worker.py: not fixed"; fail=1; }
exit $fail
