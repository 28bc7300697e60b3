#!/bin/sh
p99=1900
grep -q "timeout_ms = 2500" config/http.toml && p99=$((p99 - 400))
grep -q "retries = 2" config/http.toml && p99=$((p99 - 200))
grep -q "max_connections = 32" config/http.toml && p99=$((p99 - 350))
grep -q "enqueue_receipt" src/checkout.py && p99=$((p99 - 300))
echo "checkout p99_ms=$p99 (target < 800)"
[ "$p99" -lt 800 ] && grep -q "## Latency budget" docs/runbooks/checkout.md
