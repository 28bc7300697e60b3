#!/bin/sh
fail=0
grep -qF 'RETRY_LIMIT = 5' src/retry.py || { echo "t1: src/retry.py"; fail=1; }
grep -qF 'Tuesday 14:00-16:00 UTC' docs/DEPLOY.md || { echo "t2: docs/DEPLOY.md"; fail=1; }
grep -qF 'LEVEL = '\''INFO'\''' src/worker.py || { echo "t3: src/worker.py"; fail=1; }
exit $fail
