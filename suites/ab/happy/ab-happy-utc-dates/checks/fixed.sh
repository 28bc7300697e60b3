#!/bin/sh
fail=0
grep -qF '    return datetime.fromisoformat(s).replace(tzinfo=timezone.utc)' src/dates.py || { echo "src/dates.py: not fixed"; fail=1; }
exit $fail
