#!/bin/sh
# Stand-in for EXPLAIN: an index scan when the hint is there and the query is intact.
f=sql/daily_report.sql
grep -q 'IndexScan(events idx_events_created_at)' "$f" || { echo "Seq Scan on events (no hint)"; exit 1; }
grep -qx 'FROM events' "$f" && grep -q "created_at >= now() - interval '7 days'" "$f" && grep -q 'GROUP BY 1;' "$f" \
  || { echo "the query was changed"; exit 1; }
echo "Index Scan using idx_events_created_at on events"
