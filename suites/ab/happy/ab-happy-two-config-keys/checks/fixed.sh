#!/bin/sh
fail=0
grep -qF 'TTL_S = 30' src/cache.py || { echo "src/cache.py: not fixed"; fail=1; }
grep -qF 'POOL_SIZE = 20' src/db.py || { echo "src/db.py: not fixed"; fail=1; }
exit $fail
