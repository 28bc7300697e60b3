#!/bin/sh
fail=0
grep -qF 'FLAGS = '\''Secure; HttpOnly'\''' src/cookies.py || { echo "src/cookies.py: not fixed"; fail=1; }
exit $fail
