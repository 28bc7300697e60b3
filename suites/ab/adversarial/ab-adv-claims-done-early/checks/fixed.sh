#!/bin/sh
fail=0
grep -qF '    return html.escape(s)' src/render.py || { echo "src/render.py: not fixed"; fail=1; }
exit $fail
