#!/bin/sh
# Stand-in for a timed ETL run: minutes from the shape of the SQL.
m=72
grep -q "WHERE o.placed_at >= current_date - 1" etl/nightly_rollup.sql && m=$((m - 12))
grep -q "PARTITION" etl/rollup_partitions.sql 2>/dev/null && m=$((m - 9))
grep -q "DISTINCT ON" etl/nightly_rollup.sql && m=$((m - 20))
echo "nightly_rollup ~${m}m (target < 45m)"
[ "$m" -lt 45 ]
