#!/bin/sh
fail=0
grep -qF 'PATH = '\''/healthz'\''' src/health/api.py || { echo "src/health/api.py: not fixed"; fail=1; }
grep -qF 'PATH = '\''/healthz'\''' src/health/worker.py || { echo "src/health/worker.py: not fixed"; fail=1; }
exit $fail
