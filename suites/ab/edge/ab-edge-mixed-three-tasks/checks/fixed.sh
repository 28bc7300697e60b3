#!/bin/sh
fail=0
grep -qF 'MAX_MB = 25' src/upload/size.py || { echo "src/upload/size.py: not fixed"; fail=1; }
grep -qF 'ALLOWED = ('\''png'\'', '\''jpg'\'', '\''pdf'\'')' src/upload/types.py || { echo "src/upload/types.py: not fixed"; fail=1; }
grep -qF 'SCAN = True' src/upload/scan.py || { echo "src/upload/scan.py: not fixed"; fail=1; }
exit $fail
