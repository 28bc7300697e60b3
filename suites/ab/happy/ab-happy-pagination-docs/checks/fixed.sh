#!/bin/sh
fail=0
grep -qF 'Pass `cursor` from the previous page.' docs/api.md || { echo "docs/api.md: not fixed"; fail=1; }
exit $fail
