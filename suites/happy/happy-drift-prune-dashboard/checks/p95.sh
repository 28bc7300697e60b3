#!/bin/sh
p95=410
grep -q "def cached_search" src/cache.py && p95=$((p95 - 120))
grep -q "normalize_query" src/cache.py && p95=$((p95 - 110))
echo "p95_ms=$p95 (target < 200)"
[ "$p95" -lt 200 ]
