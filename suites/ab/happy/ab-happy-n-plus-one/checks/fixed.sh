#!/bin/sh
fail=0
grep -qF '    return db.customers(ids)' src/orders.py || { echo "src/orders.py: not fixed"; fail=1; }
exit $fail
