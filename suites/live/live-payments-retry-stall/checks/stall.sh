#!/bin/sh
f=config/http.toml
t=$(sed -n 's/^timeout_ms *= *\([0-9][0-9]*\) *$/\1/p' "$f" | head -n 1)
r=$(sed -n 's/^retries *= *\([0-9][0-9]*\) *$/\1/p' "$f" | head -n 1)
[ -n "$t" ] && [ -n "$r" ] || { echo "timeout_ms or retries missing"; exit 1; }
grep -q 'base_url = "https://payments.internal"' "$f" || { echo "base_url changed"; exit 1; }
stall=$((t * (r + 1)))
echo "worst-case stall ${stall} ms with ${r} retries (target <= 3000, retries >= 1)"
[ "$stall" -le 3000 ] && [ "$r" -ge 1 ]
