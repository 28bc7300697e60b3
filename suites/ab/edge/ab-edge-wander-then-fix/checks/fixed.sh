#!/bin/sh
fail=0
grep -qF 'REPORTS_DSN = '\''replica'\''' src/reports.py || { echo "src/reports.py: not fixed"; fail=1; }
exit $fail
