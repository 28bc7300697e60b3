#!/bin/sh
fail=0
grep -qF '    return count < limit' src/ratelimit.py || { echo "src/ratelimit.py: not fixed"; fail=1; }
exit $fail
