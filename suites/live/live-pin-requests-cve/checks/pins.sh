#!/bin/sh
f=requirements.txt
grep -qx 'requests==2.32.3' "$f" || { echo "requests is not pinned to 2.32.3"; exit 1; }
grep -qx 'flask==2.3.3' "$f" && grep -qx 'urllib3==1.26.18' "$f" || { echo "another pin changed"; exit 1; }
[ "$(grep -c . "$f")" -eq 3 ] || { echo "expected exactly 3 pins"; exit 1; }
echo "pins ok"
