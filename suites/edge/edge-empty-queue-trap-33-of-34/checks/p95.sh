#!/bin/sh
# Stand-in load test for /api/search. The dominant cost is the ILIKE scan on
# search_events.title; nothing but a trigram index on title changes it.
p95=410
if grep -qs "gin_trgm_ops" db/migrations/*.sql; then p95=170; fi
echo "p95_ms=$p95 (target < 200)"
[ "$p95" -lt 200 ]
