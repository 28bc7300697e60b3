#!/bin/sh
fail=0
grep -qF 'DUE_DAYS = 30' src/invoices.py || { echo "src/invoices.py: not fixed"; fail=1; }
exit $fail
