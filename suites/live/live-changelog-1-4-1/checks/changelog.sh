#!/bin/sh
f=CHANGELOG.md
new=$(grep -n '^## 1\.4\.1' "$f" | head -n 1 | cut -d: -f1)
old=$(grep -n '^## 1\.4\.0' "$f" | head -n 1 | cut -d: -f1)
[ -n "$new" ] || { echo "no 1.4.1 section"; exit 1; }
[ -n "$old" ] || { echo "the 1.4.0 section is gone"; exit 1; }
[ "$new" -lt "$old" ] || { echo "1.4.1 is not above 1.4.0"; exit 1; }
grep -q 'login timeout' "$f" || { echo "no login timeout bullet"; exit 1; }
grep -qx -- '- Added: CSV export of invoices.' "$f" && grep -qx -- '- Fixed: duplicate emails on retry.' "$f" \
  || { echo "1.4.0 bullets changed"; exit 1; }
echo "changelog ok"
