#!/bin/sh
fail=0
grep -qF 'NEW_CHECKOUT = True' src/flags/checkout.py || { echo "src/flags/checkout.py: not fixed"; fail=1; }
grep -qF 'FUZZY = True' src/flags/search.py || { echo "src/flags/search.py: not fixed"; fail=1; }
grep -qF 'AVATARS = True' src/flags/profile.py || { echo "src/flags/profile.py: not fixed"; fail=1; }
exit $fail
