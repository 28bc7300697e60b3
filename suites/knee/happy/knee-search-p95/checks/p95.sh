#!/bin/sh
# Stand-in load test for /api/search: p95 from what the workspace holds.
p95=410
grep -qx 42 db/schema_version && p95=$((p95 - 120))
grep -q "ttl_s = 30" config/search.toml && p95=$((p95 - 40))
grep -q "default_limit = 50" config/search.toml && p95=$((p95 - 20))
grep -q "SELECT id, title, created_at" src/search.py && p95=$((p95 - 45))
grep -q "LIMIT %(limit)s" src/search.py && p95=$((p95 - 10))
echo "p95_ms=$p95 (target < 200)"
[ "$p95" -lt 200 ] && grep -q "p95 after" docs/perf.md
