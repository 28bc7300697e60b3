#!/bin/sh
# Stand-in for a load test: p95 drops once the recency index exists, the stats
# table is analysed and the handler orders through the index.
p95=410
if [ -f db/migrations/0042_search_index.sql ] && [ -f db/migrations/0043_search_stats.sql ] && grep -q idx_search_ts src/search.py; then
  p95=180
fi
echo "p95_ms=$p95 (target < 200)"
[ "$p95" -lt 200 ]
