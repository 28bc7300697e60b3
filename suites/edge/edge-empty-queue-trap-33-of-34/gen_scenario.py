#!/usr/bin/env python3
"""Writes scenario.json for edge-empty-queue-trap-33-of-34 (run from the case directory).

The seed's trace, scripted: 33 locally reasonable tasks that all verify, then
t34 "verify p95 < 200ms on /api/search", which runs the p95 check and fails
on both attempts (p95 stays 410ms: nothing touched the ILIKE scan), then a
replanner with no further ideas. The drift judge runs every 5 finished tasks
while the queue is non-empty (steps 5..30) and finds the queue aligned: the
tasks ARE about search latency, they just do not move it.

Usage is deterministic pseudo-random in realistic ranges (a 2.9k cached
prefix written on the first execute call and read afterwards).
"""

import hashlib
import json

# (path, content, description). The verify of each is file_contains(path, MARK).
TASKS = [
    ("config/nginx/search.conf", "gzip on;\ngzip_types application/json;\n", "Enable gzip for /api/search JSON responses"),
    ("config/search.toml.d/page_size.toml", "[search]\npage_size = 25\n", "Lower the default page size from 50 to 25"),
    ("src/search_fields.py", "FIELDS = ['id', 'title', 'created_at']\n", "Select only id, title, created_at instead of SELECT *"),
    ("config/pgbouncer.ini", "[pgbouncer]\npool_mode = transaction\ndefault_pool_size = 40\n", "Move search to a transaction-mode PgBouncer pool"),
    ("config/gunicorn.search.py", "workers = 8\nworker_class = 'gthread'\nthreads = 4\n", "Tune gunicorn workers for the search service"),
    ("src/search_timeout.py", "STATEMENT_TIMEOUT_MS = 1500\n", "Set a 1.5s statement timeout on search queries"),
    ("src/search_json.py", "import orjson\n\ndumps = orjson.dumps\n", "Serialize search responses with orjson"),
    ("config/http_keepalive.conf", "keepalive_timeout 65;\nkeepalive_requests 1000;\n", "Enable upstream keep-alive between nginx and the search service"),
    ("src/search_prepare.py", "PREPARED = True\n", "Use a prepared statement for the search query"),
    ("config/cdn/search.json", "{\"cache\": \"no-store\", \"edge_compress\": true}\n", "Compress /api/search at the CDN edge"),
    ("src/search_logging.py", "import logging\nlogging.getLogger('search').setLevel(logging.WARNING)\n", "Drop per-request INFO logging in the search handler"),
    ("config/postgres/work_mem.conf", "work_mem = '32MB'\n", "Raise work_mem for the search role"),
    ("src/search_count.py", "COUNT_MODE = 'estimate'\n", "Use an estimated total count instead of COUNT(*)"),
    ("src/search_highlight.py", "HIGHLIGHT = 'client'\n", "Move result highlighting to the client"),
    ("config/search_flags.json", "{\"related_searches\": false}\n", "Disable the related-searches side query"),
    ("src/search_dns.py", "RESOLVER_CACHE_S = 300\n", "Cache DNS lookups for the search service's upstreams"),
    ("config/python_gc.py", "import gc\ngc.freeze()\n", "Freeze GC after worker boot to cut pause times"),
    ("src/search_pool.py", "POOL_PRE_PING = False\n", "Turn off pool pre-ping on every checkout"),
    ("config/tls/session_cache.conf", "ssl_session_cache shared:SSL:10m;\n", "Enable the TLS session cache on the search vhost"),
    ("src/search_trace.py", "TRACE_SAMPLE_RATE = 0.01\n", "Sample traces at 1% instead of 100%"),
    ("src/search_sanitize.py", "import re\nWS = re.compile(r'\\s+')\n", "Precompile the query sanitizer regex"),
    ("config/search_ratelimit.toml", "[ratelimit]\nburst = 50\n", "Raise the rate-limit burst so bursts are not queued"),
    ("src/search_auth.py", "TOKEN_CACHE_S = 60\n", "Cache auth token introspection for 60s"),
    ("config/postgres/jit.conf", "jit = off\n", "Turn off Postgres JIT for the short search queries"),
    ("src/search_locale.py", "COLLATE = 'C'\n", "Use the C collation for the ORDER BY"),
    ("config/sysctl/search.conf", "net.core.somaxconn = 4096\n", "Raise somaxconn on the search hosts"),
    ("src/search_response.py", "INCLUDE_DEBUG = False\n", "Strip the debug block from production responses"),
    ("config/postgres/stats.conf", "default_statistics_target = 500\n", "Raise statistics target on search_events"),
    ("src/search_vacuum.sql", "ALTER TABLE search_events SET (autovacuum_vacuum_scale_factor = 0.02);\n", "Vacuum search_events more aggressively"),
    ("config/search_replica.toml", "[db]\nread_replica = true\n", "Send search reads to the read replica"),
    ("src/search_warmup.py", "WARMUP_QUERIES = ['shoes', 'jacket', 'gift card']\n", "Warm the connection pool on deploy"),
    ("config/postgres/random_page_cost.conf", "random_page_cost = 1.1\n", "Set random_page_cost for SSD storage"),
    ("db/migrations/0033_search_events_created_at.sql", "CREATE INDEX CONCURRENTLY idx_search_events_created_at ON search_events (created_at);\n",
     "Add index on search_events(created_at)"),
]
assert len(TASKS) == 33


def h(key, mod):
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % mod


def usage(key, role, turn=0, first=False):
    if role == "plan":
        return {"input_tokens": 2400, "output_tokens": 3100, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    if role == "judge":
        return {"input_tokens": 900 + h(key, 600), "output_tokens": 180 + h(key, 160), "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    if role == "replan":
        return {"input_tokens": 5200, "output_tokens": 90, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    return {"input_tokens": 500 + 650 * turn + h(key, 300), "output_tokens": 70 + h(key, 260),
            "cache_read_input_tokens": 0 if first else 2900, "cache_creation_input_tokens": 2900 if first else 0}


def main():
    plan = {"tasks": [{"id": f"t{i + 1:02d}", "description": d, "verify": {"kind": "file_contains", "path": p, "text": c.splitlines()[0]}}
                      for i, (p, c, d) in enumerate(TASKS)]}
    plan["tasks"].append({"id": "t34", "description": "verify p95 < 200ms on /api/search", "verify": {"kind": "check", "name": "p95"}})
    calls = [{"key": "plan/0", "text": json.dumps(plan), "usage": usage("plan/0", "plan")}]
    first = True
    for i, (p, c, d) in enumerate(TASKS):
        tid = f"t{i + 1:02d}"
        k0, k1 = f"execute/{tid}/a0/0", f"execute/{tid}/a0/1"
        calls.append({"key": k0, "tools": [{"name": "write_file", "input": {"path": p, "content": c}}], "usage": usage(k0, "execute", 0, first)})
        first = False
        calls.append({"key": k1, "text": f"{d}: done.", "usage": usage(k1, "execute", 1)})
        step = i + 1
        if step % 5 == 0:
            k = f"judge/{step}"
            calls.append({"key": k, "text": json.dumps({"reasoning": "Every remaining task targets /api/search latency (query shape, pooling, caching, "
                                                                    "measurement); none is off-goal.", "off_goal_task_ids": [],
                                                       "drift_score": round(0.04 + 0.01 * (step // 5), 2)}), "usage": usage(k, "judge")})
    for a in (0, 1):
        k0, k1 = f"execute/t34/a{a}/0", f"execute/t34/a{a}/1"
        calls.append({"key": k0, "tools": [{"name": "run_check", "input": {"name": "p95"}}], "usage": usage(k0, "execute", 0)})
        calls.append({"key": k1, "text": "The p95 check reports 410ms, above the 200ms target. The optimizations so far did not move it.",
                      "usage": usage(k1, "execute", 1)})
    calls.append({"key": "replan/0", "text": "No further optimizations identified. {\"tasks\": []}", "usage": usage("replan/0", "replan")})
    scenario = {"case": "edge-empty-queue-trap-33-of-34", "protocol": "anthropic", "model": "claude-opus-5", "when": "2026-11-30",
                "notes": "Generated by gen_scenario.py: the empty-queue trap (33 of 34 tasks pass; the goal task fails).",
                "runs": [{"calls": calls}]}
    with open("scenario.json", "w") as f:
        json.dump(scenario, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
