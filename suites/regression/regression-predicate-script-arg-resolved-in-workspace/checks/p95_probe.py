#!/usr/bin/env python3
"""Stand-in load test for /api/search (the spec's predicate; lives outside the workspace)."""
import glob, sys
p95 = 170 if any("gin_trgm_ops" in open(f).read() for f in glob.glob("db/migrations/*.sql")) else 410
print(f"p95_ms={p95} (target < 200)")
sys.exit(0 if p95 < 200 else 1)
