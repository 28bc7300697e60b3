#!/bin/sh
# Stand-in for a load test of /api/search: p95 in ms from what the workspace
# holds. Lives outside the workspace so no agent tool can rewrite the check.
p95=410
if [ -f db/migrations/0042_search_index.sql ] && grep -q "idx_search_ts" src/search.py; then
  p95=180
fi
echo "p95_ms=$p95 (target < 200)"
[ "$p95" -lt 200 ]
