#!/bin/sh
fail=0
grep -qF '    return email.strip().lower()' src/users.py || { echo "src/users.py: not fixed"; fail=1; }
exit $fail
