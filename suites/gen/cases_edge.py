"""Edge cases: priority collisions and boundaries."""

import json
import os

from lib import (EXEC_BODY_FLOOR_BYTES, EXEC_BODY_SLACK_BYTES, Case, V, call, cost, esc_len, expected_notices, judge_call, ls,
                 migrate, plan_call, post, read, run_check, spend_trace, steps, task, u, worst_usd, write)

P95_GOAL = "Reduce p95 latency on /api/search to under 200ms."
HERE = os.path.dirname(os.path.abspath(__file__))


VAT = '''from decimal import ROUND_HALF_UP, Decimal


def vat(net_cents, rate):
    return int(net_cents * rate)  # truncates: 1999 * 0.19 = 379.81 -> 379
'''


def goal_met_last_dollar():
    c = Case("edge-goal-met-on-last-dollar", "edge", "GOAL_MET on the last dollar: the ledger refuses the next call, the predicate is checked first",
             ["GOAL_MET", "priority-collision", "budget-refusal"],
             "Fix the VAT rounding bug in billing/vat.py (round half up to the cent) before the month-end invoice run.")
    c.cap = 3.0
    c.ws("billing/vat.py", VAT)
    c.check_cmd("vat", ["python3", "-B", "-c", "import sys; sys.path.insert(0, 'billing'); from vat import vat; from decimal import Decimal; assert vat(1999, Decimal('0.19')) == 380 and vat(1000, Decimal('0.07')) == 70, 'still truncating'"])
    c.predicate = ("check", "vat")
    tasks = [
        task("t1", "Round VAT half up to the cent in billing/vat.py", V.check("vat")),
        task("t2", "Post the fix and the affected October invoices to #billing", V.outbox("vat-rounding-fix")),
    ]
    fixed = '''from decimal import ROUND_HALF_UP, Decimal


def vat(net_cents, rate):
    return int((Decimal(net_cents) * Decimal(rate)).quantize(Decimal("1"), rounding=ROUND_HALF_UP))
'''
    log = "\n".join(f"2026-10-{1 + m // 120:02d}T{(m // 60) % 24:02d}:{m % 60:02d}:00Z invoice INV-{9000 + m} net=1999 vat=379 expected=380 customer=C{m * 7919 % 100000:05d}"
                     for m in range(3000)) + "\n"
    c.ws("logs/invoice-run-2026-10.log", log)
    c.run([
        plan_call(tasks, usage=u(2200, 420)),
        # The agent pulls the whole October invoice log (~280 KB) into context...
        call("execute/t1/a0/0", tools=[{"name": "read_file", "input": {"path": "logs/invoice-run-2026-10.log"}}], usage=u(600, 90, cw=2300)),
        # ...so the next request re-sends it: one enormous call, the whole context written to the cache.
        call("execute/t1/a0/1", tools=[{"name": "write_file", "input": {"path": "billing/vat.py", "content": fixed}}],
             usage=u(2000, 5200, cw=EXEC_BODY_FLOOR_BYTES + esc_len(log) - 2000)),
    ])
    c.fill_usage()
    tr = spend_trace(c)
    spent = tr[-1][1] + tr[-1][2]
    ctx = EXEC_BODY_FLOOR_BYTES + esc_len(log)
    assert tr[-1][1] + worst_usd("claude-opus-5", ctx + EXEC_BODY_SLACK_BYTES, 8192) <= c.cap, "the enormous call itself was allowed"
    worst_next = worst_usd("claude-opus-5", ctx, 8192, allowance=0)  # a floor: the next request re-sends the same context
    assert spent + worst_next > c.cap and spent < c.cap, (spent, worst_next)
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"], "queue_left": ["t2"], "parked": [],
                "report": {"model_calls": 3, "class": "SUCCESS"}, "outbox_total": 0}
    c.comment = f"""After execute/t1/a0/1 the ledger holds ${spent:.6f} of $3.00; the next call re-sends the ~{ctx // 1000} KB context, so its
worst case (that many tokens written to cache at $6.25/MTok plus 8192 output tokens at $25/MTok: at least ${worst_next:.4f})
would cross the cap, and reserve() refuses it and sets `blocked`. The fix already landed, and the top of the loop
checks the predicate first: GOAL_MET, not BUDGET_EXHAUSTED. The refused call (execute/t1/a0/2) is not in the
cassette: a harness that made it would hit a recording miss. The enormous call bills what its request could:
the log it re-sends is the bytes its usage counts."""
    return c


ETL_SQL = """-- nightly_rollup.sql: rebuild the daily revenue rollup
INSERT INTO rollup_daily_revenue
SELECT date_trunc('day', o.placed_at) AS day, o.region, sum(o.total)
FROM orders o
JOIN order_items i ON i.order_id = o.id
GROUP BY 1, 2;
"""


def budget_refused_queue_empties():
    c = Case("edge-budget-refused-as-queue-empties", "edge", "Budget refusal on the lap the queue empties: BUDGET_EXHAUSTED, not QUEUE_EMPTY_GOAL_UNMET",
             ["BUDGET_EXHAUSTED", "priority-collision", "budget-refusal"],
             "Get the nightly revenue rollup ETL under 45 minutes.")
    c.cap = 1.5
    c.planner = "claude-opus-4-1"
    c.executor = "claude-sonnet-5"
    c.judge = "claude-sonnet-5"
    c.max_tokens = 4096
    c.ws("etl/nightly_rollup.sql", ETL_SQL)
    # Six months of per-stage run timings: ~100 KB. Each task reads it first, so its later turns carry it.
    runs_log = "".join(f"2026-{6 + d // 30:02d}-{1 + d % 30:02d} nightly_rollup stage={st} rows={(d * 7919 + k * 131) % 900000 + 100000} took={40 + (d * k) % 35}m{(d + k) % 60:02d}s\n"
                       for d in range(180) for k, st in enumerate(["extract", "join", "aggregate", "load", "vacuum", "analyze", "notify"]))
    c.ws("etl/runs.log", runs_log)
    c.check_script("etl_runtime", "etl_runtime.sh", '''#!/bin/sh
# Stand-in for a timed ETL run: minutes from the shape of the SQL.
m=72
grep -q "WHERE o.placed_at >= current_date - 1" etl/nightly_rollup.sql && m=$((m - 12))
grep -q "PARTITION" etl/rollup_partitions.sql 2>/dev/null && m=$((m - 9))
grep -q "DISTINCT ON" etl/nightly_rollup.sql && m=$((m - 20))
echo "nightly_rollup ~${m}m (target < 45m)"
[ "$m" -lt 45 ]
''')
    c.predicate = ("check", "etl_runtime")
    tasks = [
        task("t1", "Only rebuild yesterday's partition: filter orders to placed_at >= current_date - 1", V.contains("etl/nightly_rollup.sql", "current_date - 1")),
        task("t2", "Partition rollup_daily_revenue by month (etl/rollup_partitions.sql)", V.contains("etl/rollup_partitions.sql", "PARTITION")),
    ]
    sql2 = ETL_SQL.replace("GROUP BY 1, 2;", "WHERE o.placed_at >= current_date - 1\nGROUP BY 1, 2;")
    ctx = EXEC_BODY_FLOOR_BYTES + esc_len(runs_log)  # a floor for every turn after the log was read
    c.run([
        plan_call(tasks, usage=u(2600, 520)),
        call("execute/t1/a0/0", tools=[{"name": "read_file", "input": {"path": "etl/runs.log"}}], usage=u(900, 200, cw=2000)),
        call("execute/t1/a0/1", tools=[{"name": "write_file", "input": {"path": "etl/nightly_rollup.sql", "content": sql2}}], usage=u(ctx - 2000, 3800, cr=2000)),
        call("execute/t1/a0/2", text="Rollup now rebuilds only yesterday.", usage=u(ctx - 2000, 300, cr=2000)),
        call("execute/t2/a0/0", tools=[{"name": "read_file", "input": {"path": "etl/runs.log"}}], usage=u(900, 150, cr=2000)),
        call("execute/t2/a0/1", tools=[{"name": "write_file", "input": {"path": "etl/rollup_partitions.sql", "content": "CREATE TABLE rollup_daily_revenue_p (LIKE rollup_daily_revenue) PARTITION BY RANGE (day);\nCREATE TABLE rollup_daily_revenue_2026_11 PARTITION OF rollup_daily_revenue_p FOR VALUES FROM ('2026-11-01') TO ('2026-12-01');\n"}}],
             usage=u(ctx - 2000, 4100, cr=2000)),
        call("execute/t2/a0/2", text="Monthly partitions defined.", usage=u(ctx - 2000, 350, cr=2000)),
    ])
    c.fill_usage()
    tr = spend_trace(c)
    spent = tr[-1][1] + tr[-1][2]
    for key, before, _ in tr[1:]:
        assert before + worst_usd("claude-sonnet-5", ctx + EXEC_BODY_SLACK_BYTES, 4096) <= c.cap, ("every execute call is allowed", key)
    replan_worst_floor = 4096 * 75 / 1e6
    assert spent < 0.9 * c.cap, "must not be winding down: the replan must be reached and refused"
    assert spent + replan_worst_floor > c.cap, spent
    c.expect = {"ending": "BUDGET_EXHAUSTED", "predicate_met": False, "verified": ["t1", "t2"], "queue_left": [], "parked": [],
                "report": {"model_calls": 7, "class": "PARTIAL", "exit_code": 2}}
    c.comment = f"""Both tasks verify, the queue is now empty and the ETL is still ~51m, so the harness wants replan/0. Its worst case
(4096 output tokens at $75/MTok on the planner = $0.3072 plus the prompt) on top of ${spent:.4f} crosses the $1.50 cap:
reserve() refuses it on the very lap the queue emptied. The top of the loop checks the ledger before the queue,
so the ending is BUDGET_EXHAUSTED (PARTIAL), not QUEUE_EMPTY_GOAL_UNMET. Spend stays below 90% (${0.9 * c.cap:.2f}) so
the wind-down does not stop the lap first. replan/0 is not in the cassette. Each task reads the ~{esc_len(runs_log) // 1000} KB run log
first: the large contexts its later turns bill are the bytes they carry."""
    return c


def budget_stall():
    c = Case("edge-budget-stall-27-75-of-28", "edge", "Spend stalls at $27.75 of a $28 cap: BUDGET_EXHAUSTED although spend never reaches the cap",
             ["BUDGET_EXHAUSTED", "budget-stall", "budget-notice"],
             "Find why the nightly invoice export drops rows and fix it.")
    c.cap = 28.0
    c.max_tokens = 4096
    c.loop = {"loop_cap": 40}

    def part(i, lines):
        return f"# part {i} of 30 of the nightly export log\n" + "".join(
            f"2026-11-29T02:{i:02d}:{s % 60:02d}Z export batch={i * 10000 + s} rows_in=5000 rows_out={5000 if (s % 4) else 4999}\n"
            for s in range(lines))
    # Part 1 is the batch run that logged every row batch: ~125 KB. Once read, every later turn re-sends it.
    parts = {i: part(i, 1820 if i == 1 else 24) for i in range(1, 31)}
    for i, text in parts.items():
        c.ws(f"logs/export-2026-11-29.part{i:02d}.log", text)
    c.ws("export/writer.py", "def write_batch(rows, out):\n    for r in rows[:-1]:\n        out.write(r)\n")
    c.check_cmd("export_rows", ["sh", "-c", "grep -q 'for r in rows:' export/writer.py"])
    c.predicate = ("check", "export_rows")
    tasks = [
        task("t1", "Find the batch boundary where rows are dropped in the export logs", V.exists("docs/export-drop-analysis.md")),
        task("t2", "Fix the off-by-one in export/writer.py", V.check("export_rows")),
        task("t3", "Post the root cause to #data-eng", V.outbox("export-drop-root-cause")),
    ]
    listing = 30 * len("export-2026-11-29.part01.log\n")
    calls = [plan_call(tasks, usage=u(3100, 610)),
             call("execute/t1/a0/0", tools=[{"name": "list_files", "input": {"path": "logs"}}], usage=u(700, 300, cw=2300)),
             call("execute/t1/a0/1", tools=[{"name": "read_file", "input": {"path": "logs/export-2026-11-29.part01.log"}}],
                  usage=u(700 + listing, 310, cr=2300))]
    # A runaway task: every turn re-sends the whole context (part 1 plus every part read since), and the reads are
    # slow enough that the 5-minute cache TTL expires between turns: each turn writes the context to the cache again
    # (1.25x input) and never reads it. Usage is at most the request's bytes: a token is at least one byte.
    ctx = EXEC_BODY_FLOOR_BYTES + listing
    for i in range(2, 31):
        ctx += esc_len(parts[i - 1])
        calls.append(call(f"execute/t1/a0/{i}", tools=[{"name": "read_file", "input": {"path": f"logs/export-2026-11-29.part{i:02d}.log"}}],
                          usage=u(0, 300 + 7 * i, cw=ctx)))
    c.run(calls)
    c.fill_usage()
    others = sum(cost(k["usage"], "claude-opus-5") for k in calls[:-1])
    last = calls[-1]["usage"]
    rest = 27.75 - others - last["output_tokens"] * 25 / 1e6
    solved = round(rest / 6.25e-6)
    assert solved <= last["cache_creation_input_tokens"], ("the last call would bill more than its request's bytes", solved)
    last["cache_creation_input_tokens"] = solved
    c.fill_usage()
    tr = spend_trace(c)
    spent = tr[-1][1] + tr[-1][2]
    assert abs(spent - 27.75) < 1e-6, spent
    # Each call it makes was allowed: spend before it plus its reservation (bytes <= the floor estimate + slack) fit.
    body_last = ctx + EXEC_BODY_SLACK_BYTES
    assert tr[-1][1] + worst_usd("claude-opus-5", body_last, 4096) <= 28.0, ("the last booked call itself must have been allowed", tr[-1], ctx, solved)
    # The next call's reservation, even at the floor estimate of its bytes, would cross the cap.
    next_floor = worst_usd("claude-opus-5", ctx + esc_len(parts[30]), 4096, allowance=0)
    assert spent + next_floor > 28.0, next_floor
    n = expected_notices(c)
    c.expect = {"ending": "BUDGET_EXHAUSTED", "predicate_met": False, "verified": [], "parked": ["t1"],
                "parked_reason_contains": {"t1": "BUDGET_EXHAUSTED"}, "queue_left": ["t2", "t3"],
                "spend_usd_min": 27.7499, "spend_usd_max": 27.7501, "report": {"hard_cap_usd": 28.0, "class": "PARTIAL"},
                "notice_at_end": True, "min_budget_notices": n}
    c.auto_spend = False
    c.cost_cap_usd = 28.0
    c.comment = f"""The seed's stall: spend reaches exactly $27.75 (the last call's cache write solved for it) and the next call's
worst case would cross $28: its request re-sends a ~{(ctx + esc_len(parts[30])) // 1000} KB context, which the ledger reserves as that many tokens
written to cache ($6.25/MTok, at least ${next_floor - 4096 * 25 / 1e6:.2f}) plus 4096 output tokens at $25/MTok ($0.10), reaching at least
${spent + next_floor:.2f}. So reserve() refuses it, sets `blocked`, and the run ends BUDGET_EXHAUSTED at $27.75: `spent >= hard_cap`
alone would never fire. Every scripted usage is within what its request could bill (a token is at least a byte):
part 1 of the log (~125 KB) is read first and every later turn carries it. The task in flight (t1) is settled by
verification and parked with the ending named. {n} execute request(s) went out at >= 70%."""
    return c


SESSIONS_PY = '''from pymemcache.client.base import Client

_client = Client(("memcached.internal", 11211))


def get_session(sid):
    return _client.get(f"sess:{sid}")


def put_session(sid, blob, ttl_s=1800):
    _client.set(f"sess:{sid}", blob, expire=ttl_s)
'''


NOTICE_LOG_LINES = 760


def notice_at_70():
    c = Case("edge-budget-notice-at-70", "edge", "From 70% of the cap every execute request carries the budget notice as its last content",
             ["GOAL_MET", "budget-notice", "notice-placement"],
             "Move the web session store from memcached to Redis (redis://sessions.internal:6379/2) without changing the session API.")
    c.cap = 1.2
    c.executor = "claude-sonnet-5"
    c.max_tokens = 4096
    c.ws("web/sessions.py", SESSIONS_PY)
    c.ws("requirements.txt", "flask==3.0.3\npymemcache==4.0.0\n")
    c.ws("deploy/web.env", "SESSION_BACKEND=memcached\nMEMCACHED_HOST=memcached.internal\n")
    c.check_script("redis_sessions", "redis_sessions.sh", '''#!/bin/sh
fail=0
grep -q "redis.Redis.from_url" web/sessions.py || { echo "sessions.py not on redis"; fail=1; }
grep -q "pymemcache" web/sessions.py requirements.txt && { echo "pymemcache still used"; fail=1; }
grep -q "^redis==" requirements.txt || { echo "redis not pinned"; fail=1; }
grep -q "^SESSION_REDIS_URL=redis://sessions.internal:6379/2$" deploy/web.env || { echo "env not switched"; fail=1; }
grep -q "def get_session(sid)" web/sessions.py && grep -q "def put_session(sid, blob, ttl_s=1800)" web/sessions.py || { echo "API changed"; fail=1; }
exit $fail
''')
    c.predicate = ("check", "redis_sessions")
    new_py = '''import os

import redis

_client = redis.Redis.from_url(os.environ["SESSION_REDIS_URL"])


def get_session(sid):
    return _client.get(f"sess:{sid}")


def put_session(sid, blob, ttl_s=1800):
    _client.set(f"sess:{sid}", blob, ex=ttl_s)
'''
    tasks = [
        task("t1", "Switch web/sessions.py to redis-py (same get_session/put_session API)", V.contains("web/sessions.py", "redis.Redis.from_url")),
        task("t2", "Replace pymemcache with redis==5.0.7 in requirements.txt", V.contains("requirements.txt", "redis==5.0.7")),
        task("t3", "Point deploy/web.env at redis://sessions.internal:6379/2", V.contains("deploy/web.env", "SESSION_REDIS_URL=")),
    ]
    # A week of session-store errors (~100 KB): t1 reads it first, so t1's later turns carry it.
    errlog = "".join(f"2026-11-{22 + i // 110:02d}T{(i // 5) % 24:02d}:{i * 13 % 60:02d}:17Z web-{i % 12:02d} pymemcache.exceptions.MemcacheUnexpectedCloseError sid=s{i * 7919 % 10**8:08d} key=sess evicted_at_ttl_s={1800 - (i * 7) % 900}\n"
                     for i in range(NOTICE_LOG_LINES))
    c.ws("logs/session-errors.log", errlog)
    ctx = EXEC_BODY_FLOOR_BYTES + esc_len(errlog)
    c.run([
        plan_call(tasks, usage=u(2400, 380)),
        call("execute/t1/a0/0", tools=[{"name": "read_file", "input": {"path": "logs/session-errors.log"}}], usage=u(900, 150, cw=2000)),
        # The cache TTL lapses while the agent reads: t1's turns pay full input for the log they carry.
        call("execute/t1/a0/1", tools=[{"name": "read_file", "input": {"path": "web/sessions.py"}}], usage=u(ctx - 2000, 160, cr=2000)),
        call("execute/t1/a0/2", tools=[{"name": "write_file", "input": {"path": "web/sessions.py", "content": new_py}}], usage=u(ctx - 1000, 900, cr=2000)),
        call("execute/t1/a0/3", text="sessions.py uses redis-py; TTL via ex=.", usage=u(ctx - 500, 120, cr=2000)),
        call("execute/t2/a0/0", tools=[{"name": "read_file", "input": {"path": "requirements.txt"}}], usage=u(900, 110, cr=2000)),
        call("execute/t2/a0/1", tools=[{"name": "write_file", "input": {"path": "requirements.txt", "content": "flask==3.0.3\nredis==5.0.7\n"}}], usage=u(1000, 140, cr=2000)),
        call("execute/t2/a0/2", text="pymemcache replaced by redis==5.0.7.", usage=u(1100, 90, cr=2000)),
        call("execute/t3/a0/0", tools=[{"name": "write_file", "input": {"path": "deploy/web.env", "content": "SESSION_BACKEND=redis\nSESSION_REDIS_URL=redis://sessions.internal:6379/2\n"}}], usage=u(900, 160, cw=2000)),
        call("execute/t3/a0/1", text="web.env points at Redis db 2.", usage=u(1000, 80, cr=2000)),
    ])
    c.fill_usage()
    tr = spend_trace(c)
    n = expected_notices(c)
    final = tr[-1][1] + tr[-1][2]
    assert n >= 3 and final < 0.9 * c.cap, (n, final)
    carries_log = {"execute/t1/a0/1", "execute/t1/a0/2", "execute/t1/a0/3"}
    for key, before, _ in tr:
        body = (ctx if key in carries_log else EXEC_BODY_FLOOR_BYTES) + EXEC_BODY_SLACK_BYTES
        assert before + worst_usd("claude-sonnet-5", body, 4096) < c.cap, ("every call is allowed", key)
    first = next(k for k, b, _ in tr if k.startswith("execute/") and b / c.cap >= 0.7)
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2", "t3"],
                "notice_at_end": True, "min_budget_notices": n, "report": {"budget_notices": n}}
    c.comment = f"""Spend crosses 70% of $1.20 ($0.84) at the end of t1 (which reads a ~{esc_len(errlog) // 1000} KB error log first and pays full input for
it on every later turn): the first request sent at or above 70% is {first}, and every execute request from there on
({n} in all) must carry the budget notice as the last content of the last message, never in the system prompt (the
cached prefix stays byte-identical). Final spend ${final:.4f} stays below the 90% wind-down ($1.08), so the run
reaches the goal."""
    return c


CHAIN = [
    ("t1", "Profile /api/search and record the slowest spans", V.exists("docs/perf/search-profile.md")),
    ("t2", "Add a read-through cache for search results", V.contains("src/cache.py", "def cached_search")),
    ("t3", "Refactor the cache layer (one CacheBackend interface for redis and in-process)", V.contains("src/cache.py", "class CacheBackend")),
    ("t4", "Add cache hit/miss metrics", V.contains("src/cache.py", "CACHE_HITS")),
    ("t5", "Build a metrics dashboard for the cache", V.exists("dashboard/index.html")),
    ("t6", "Add auth with SSO login to the metrics dashboard", V.exists("dashboard/auth.py")),
    ("t7", "Add the missing trigram index the profile pointed at (db/migrations/0043_search_trgm.sql)", V.contains("db/migrations/0043_search_trgm.sql", "gin_trgm_ops")),
]

P95_TRGM = '''#!/bin/sh
# Stand-in load test: the profile's top span is the ILIKE scan; only the trigram index fixes it.
p95=410
grep -q "def cached_search" src/cache.py 2>/dev/null && p95=$((p95 - 60))
grep -q "gin_trgm_ops" db/migrations/0043_search_trgm.sql 2>/dev/null && p95=$((p95 - 200))
echo "p95_ms=$p95 (target < 200)"
[ "$p95" -lt 200 ]
'''


def chain_actions(tid):
    return {
        "t1": [read("src/search.py"), write("docs/perf/search-profile.md", "# /api/search\n- 68% of p95: `title ILIKE '%' || q || '%'` seq scan on search_events\n- 19%: repeated identical queries\n")],
        "t2": [write("src/cache.py", "_cache = {}\n\n\ndef cached_search(db, q, search):\n    if q not in _cache:\n        _cache[q] = search(db, q)\n    return _cache[q]\n")],
        "t3": [write("src/cache.py", "class CacheBackend:\n    def get(self, k): ...\n    def set(self, k, v): ...\n\n\n_cache = {}\n\n\ndef cached_search(db, q, search):\n    if q not in _cache:\n        _cache[q] = search(db, q)\n    return _cache[q]\n")],
        "t4": [write("src/cache.py", "CACHE_HITS = 0\nCACHE_MISSES = 0\n\n\nclass CacheBackend:\n    def get(self, k): ...\n    def set(self, k, v): ...\n\n\n_cache = {}\n\n\ndef cached_search(db, q, search):\n    global CACHE_HITS, CACHE_MISSES\n    if q in _cache:\n        CACHE_HITS += 1\n    else:\n        CACHE_MISSES += 1\n        _cache[q] = search(db, q)\n    return _cache[q]\n")],
        "t5": [write("dashboard/index.html", "<!doctype html><title>Cache metrics</title><canvas id=hits></canvas>\n")],
        "t6": [write("dashboard/auth.py", "from flask_dance.contrib.google import make_google_blueprint\n\nsso = make_google_blueprint(scope=['openid', 'email'])\n")],
        "t7": [write("db/migrations/0043_search_trgm.sql", "CREATE EXTENSION IF NOT EXISTS pg_trgm;\nCREATE INDEX CONCURRENTLY idx_search_title_trgm ON search_events USING gin (title gin_trgm_ops);\n")],
    }[tid]


def chain_case(cid, title, covers, every, judges):
    c = Case(cid, "edge", title, covers, P95_GOAL)
    c.ws("src/search.py", "def search(db, q):\n    return db.execute(\"SELECT id, title FROM search_events WHERE title ILIKE '%%' || %(q)s || '%%' LIMIT 50\", {'q': q}).fetchall()\n")
    c.ws("src/cache.py", "# no cache yet\n")
    c.check_script("p95", "p95.sh", P95_TRGM)
    c.predicate = ("check", "p95")
    # The bands are NOT restated: these cases rely on the spec's defaults
    # (prune above 0.3, halt above 0.5), so a changed default fails them.
    c.drift = {"every_tasks": every}
    tasks = [task(t, d, v) for t, d, v in CHAIN]
    return c, tasks


def drift_exactly_half():
    c, tasks = chain_case("edge-drift-exactly-0-5-prunes", "Drift score exactly 0.5 prunes (strict >) and the run continues to the goal",
                          ["GOAL_MET", "drift-prune", "drift-boundary-0.5", "drift-chain"], 2, None)
    calls = [plan_call(tasks)]
    for t in ("t1", "t2"):
        calls += steps(t, chain_actions(t), f"{t} done.")
    calls.append(judge_call("judge/2", "t3 and t4 are cache work that can plausibly move p95; t7 is the profile's top span. t5 (a dashboard) and t6 (dashboard SSO) would not change p95 at all.", ["t5", "t6"], 0.5))
    for t in ("t3", "t4"):
        calls += steps(t, chain_actions(t), f"{t} done.")
    calls.append(judge_call("judge/4", "Only t7 remains and it targets the dominant span.", [], 0.05))
    calls += steps("t7", chain_actions("t7"), "Trigram index added for the ILIKE scan.")
    c.run(calls)
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2", "t3", "t4", "t7"], "pruned": ["t5", "t6"],
                "queue_left": [], "drift_bands": ["prune", "aligned"], "files_absent": ["dashboard/index.html", "dashboard/auth.py"]}
    c.comment = "Bands are strict: 0.5 is not above halt_above = 0.5, so it is the prune band. The off-goal dashboard tasks are\npruned and the run continues (no DRIFT_DETECTED) to the trigram index that meets the goal."
    return c


def drift_exactly_030():
    c, tasks = chain_case("edge-drift-exactly-0-3-does-nothing", "Drift score exactly 0.3 does nothing: the off-goal tasks the judge named stay and run",
                          ["GOAL_MET", "drift-boundary-0.3", "drift-chain"], 3, None)
    calls = [plan_call(tasks)]
    for t in ("t1", "t2", "t3"):
        calls += steps(t, chain_actions(t), f"{t} done.")
    calls.append(judge_call("judge/3", "t5 and t6 (dashboard, dashboard SSO) look off-goal; the rest is on the latency path. Mild drift.", ["t5", "t6"], 0.3))
    for t in ("t4", "t5", "t6"):
        calls += steps(t, chain_actions(t), f"{t} done.")
    calls.append(judge_call("judge/6", "Only the trigram index remains; aligned.", [], 0.1))
    calls += steps("t7", chain_actions("t7"), "Trigram index added.")
    c.run(calls)
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2", "t3", "t4", "t5", "t6", "t7"], "pruned": [],
                "drift_bands": ["aligned", "aligned"], "files_contain": {"dashboard/auth.py": "make_google_blueprint"}}
    c.comment = "0.3 is not above prune_above = 0.3: the gate records the score and prunes nothing, even though the judge listed\nt5 and t6 as off-goal. The dashboard and its SSO get built (the cost of the band edge), and the run still ends\nGOAL_MET once the trigram index lands."
    return c


def time_limit():
    c = Case("edge-time-limit", "edge", "Wall clock runs out mid-call: the call is cut at the limit and booked at its worst case, TIME_LIMIT, remaining tasks reported",
             ["TIME_LIMIT", "wall-clock"],
             "Backfill the missing October 2026 rows of the analytics rollup and reconcile them against the billing totals.")
    c.wall = 3
    c.case_extra["latency_scale"] = 1.0
    c.ws("analytics/backfill/README.md", "One SQL file per month: analytics/backfill/<yyyy-mm>.sql, run by the nightly job.\n")
    c.check_cmd("reconciled", ["test", "-f", "analytics/reconciliation/2026-10.csv"])
    c.predicate = ("check", "reconciled")
    tasks = [
        task("t1", "Write analytics/backfill/2026-10.sql for the missing October days", V.contains("analytics/backfill/2026-10.sql", "2026-10-01")),
        task("t2", "Run the reconciliation against billing totals and store analytics/reconciliation/2026-10.csv", V.exists("analytics/reconciliation/2026-10.csv")),
        task("t3", "Post the reconciliation summary to #analytics", V.outbox("rollup-2026-10-reconciled")),
    ]
    c.run([
        # The answered calls take 1 s of the 3 s clock, so the story holds on a machine (or a replay) up to twice as
        # slow: `bench flaky` found the old 2.6 s (1.2 + 0.7 + 0.7) failing from 1.22x the replayed latency.
        plan_call(tasks, latency=400),
        call("execute/t1/a0/0", tools=[{"name": "read_file", "input": {"path": "analytics/backfill/README.md"}}], latency=300),
        call("execute/t1/a0/1", tools=[{"name": "write_file", "input": {"path": "analytics/backfill/2026-10.sql", "content": "INSERT INTO rollup_daily SELECT * FROM rollup_source WHERE day BETWEEN '2026-10-01' AND '2026-10-31' ON CONFLICT (day, region) DO NOTHING;\n"}}], latency=300),
        # In flight when the clock runs out: requested at about 1 s, cut at 3 s, never answered (its reply would take 5 s).
        call("execute/t1/a0/2", text="Backfill SQL for October written.", latency=5000),
        call("execute/t2/a0/0", text="never requested: the wall clock is spent", unused=True),
    ])
    c.fill_usage()
    answered = sum(x for k, _, x in spend_trace(c) if k != "execute/t1/a0/2")
    # The cut call may have been billed (the server had it): booked at its worst case, a request of at least the
    # floor and at most the floor plus the slack bytes, plus 8192 output tokens.
    lo = answered + worst_usd("claude-opus-5", EXEC_BODY_FLOOR_BYTES, 8192, allowance=0)
    hi = answered + worst_usd("claude-opus-5", EXEC_BODY_FLOOR_BYTES + EXEC_BODY_SLACK_BYTES, 8192)
    c.auto_spend = False
    c.cost_cap_usd = round(hi + 0.05, 2)
    c.expect = {"ending": "TIME_LIMIT", "predicate_met": False, "verified": ["t1"], "queue_left": ["t2", "t3"], "parked": [],
                "spend_usd_min": round(lo, 6), "spend_usd_max": round(hi, 6),
                "report": {"class": "PARTIAL", "exit_code": 2, "alert": "alert", "model_calls": 4}}
    c.comment = f"""Replayed latency is real here (latency_scale = 1): 0.4s planning plus 2 x 0.3s for t1, then execute/t1/a0/2 (a 5s
reply) is in flight when the 3s wall clock runs out. The harness bounds every model call by the time left on the run's
clock: the call is cut at 3s (not when its reply would have arrived), booked at its worst case (the request reached
the server, so it may have been billed: spend ${lo:.4f}..${hi:.4f}, not the ${answered:.4f} the answered calls cost), and
the run ends TIME_LIMIT. t1's file was already written: verification at the end settles t1 as verified; t2 and t3
are reported as left."""
    return c


def malformed_plan_then_valid():
    c = Case("edge-malformed-plan-then-valid", "edge", "A plan that is not JSON goes back to the planner with the error; plan/1 is used",
             ["GOAL_MET", "malformed-plan"],
             "Raise the default page size of the audit log API from 20 to 100 (max stays 500).")
    c.ws("api/audit.py", "DEFAULT_PAGE_SIZE = 20\nMAX_PAGE_SIZE = 500\n\n\ndef list_events(db, cursor=None, page_size=DEFAULT_PAGE_SIZE):\n    page_size = min(page_size, MAX_PAGE_SIZE)\n    return db.events_after(cursor, page_size)\n")
    c.check_cmd("page_size", ["sh", "-c", "grep -q '^DEFAULT_PAGE_SIZE = 100$' api/audit.py && grep -q '^MAX_PAGE_SIZE = 500$' api/audit.py"])
    c.predicate = ("check", "page_size")
    tasks = [task("t1", "Set DEFAULT_PAGE_SIZE = 100 in api/audit.py", V.check("page_size"))]
    c.run([
        call("plan/0", text="Sure! Here's how I'd approach it:\n1. Open api/audit.py\n2. Change DEFAULT_PAGE_SIZE from 20 to 100\n3. Leave MAX_PAGE_SIZE alone\nLet me know if you want me to proceed."),
        plan_call(tasks, key="plan/1"),
        *steps("t1", [read("api/audit.py"), write("api/audit.py", "DEFAULT_PAGE_SIZE = 100\nMAX_PAGE_SIZE = 500\n\n\ndef list_events(db, cursor=None, page_size=DEFAULT_PAGE_SIZE):\n    page_size = min(page_size, MAX_PAGE_SIZE)\n    return db.events_after(cursor, page_size)\n")],
               "Default page size is 100."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"], "report": {"model_calls": 5},
                "request_contains_in_order": [{"call_key": "plan/1", "strings": ["Here's how I'd approach it", "could not be used", "no JSON object", "Reply again with only the JSON object"]}]}
    c.comment = "plan/0 answers in prose. The harness keeps planning: the reply and the parse error go back to the model as an\nobservation (checked in the plan/1 request body) and the valid plan/1 is admitted."
    return c


def plan_malformed_twice():
    c = Case("edge-plan-malformed-twice", "edge", "Two malformed plans: no tasks, QUEUE_EMPTY_GOAL_UNMET with the planner failure in the detail",
             ["QUEUE_EMPTY_GOAL_UNMET", "malformed-plan"],
             "Add rate limiting (100 requests/minute per API key) to the public search API.")
    c.ws("api/public.py", "from flask import Blueprint\n\nbp = Blueprint('public', __name__)\n\n\n@bp.get('/v1/search')\ndef search():\n    ...\n")
    c.check_cmd("ratelimit", ["grep", "-q", "@limiter.limit(\"100/minute\"", "api/public.py"])
    c.predicate = ("check", "ratelimit")
    cut = json.dumps({"tasks": [task("t1", "Add flask-limiter keyed on the API key to api/public.py", V.contains("api/public.py", "limiter.limit")),
                                task("t2", "Document the 429 response in docs/public-api.md", V.contains("docs/public-api.md", "429"))]})
    c.run([
        call("plan/0", text="I think we should use flask-limiter with a redis storage backend. The first task is to add the dependency, then decorate the search route."),
        call("plan/1", text=cut[:170], stop="max_tokens", usage=u(2900, 4096)),
        call("replan/0", text="Same plan as before: flask-limiter on the search route, then the docs."),
    ])
    c.expect = {"ending": "QUEUE_EMPTY_GOAL_UNMET", "predicate_met": False, "verified": [], "parked": [], "queue_left": [],
                "detail_contains": "replanner output malformed", "report": {"model_calls": 3, "class": "FAILURE", "exit_code": 3}}
    c.comment = "plan/0 is prose; plan/1 is cut off at max_tokens mid-JSON. One format retry is all the planner gets; a plan that\nadmitted nothing gets the one replan the spec allows (replan/0, prose again). The run has no tasks and ends\nQUEUE_EMPTY_GOAL_UNMET with the parse error in the report's detail, never a silent success."
    return c


def resume_partial_migration():
    c = Case("edge-resume-partial-migration", "edge", "Killed between migration steps: on resume the half-applied migration is parked for a human, never re-run",
             ["QUEUE_EMPTY_GOAL_UNMET", "resume", "partially-applied", "migration"],
             "Move user addresses out of users.address into a normalized addresses table (migration 0215) and point the ORM at it.")
    c.interrupt = "between_migration_steps:1"
    c.ws("db/schema_version", "214\n")
    c.ws("migrations/0215_addresses_table.json", json.dumps({"steps": [
        {"path": "db/migrations/0215a_create_addresses.sql", "content": "CREATE TABLE addresses (id bigserial PRIMARY KEY, user_id bigint NOT NULL REFERENCES users(id), line1 text, city text, postcode text, country char(2));\n"},
        {"path": "db/migrations/0215b_copy_addresses.sql", "content": "INSERT INTO addresses (user_id, line1, city, postcode, country) SELECT id, address->>'line1', address->>'city', address->>'postcode', address->>'country' FROM users WHERE address IS NOT NULL;\n"},
        {"path": "db/migrations/0215c_drop_users_address.sql", "content": "ALTER TABLE users DROP COLUMN address;\n"},
        {"path": "db/schema_version", "content": "215\n"}]}, indent=2) + "\n")
    c.ws("app/models/user.py", "class User(Base):\n    __tablename__ = 'users'\n    id = Column(BigInteger, primary_key=True)\n    address = Column(JSONB)\n")
    c.check_cmd("schema_215", ["sh", "-c", "grep -qx 215 db/schema_version && grep -q 'relationship(\"Address\"' app/models/user.py"])
    c.predicate = ("check", "schema_215")
    tasks = [
        task("t1", "Apply migration 0215_addresses_table", V.migration("0215_addresses_table")),
        task("t2", "Replace User.address with an addresses relationship", V.contains("app/models/user.py", 'relationship("Address"')),
    ]
    c.run([
        plan_call(tasks),
        call("execute/t1/a0/0", tools=[{"name": "apply_migration", "input": {"name": "0215_addresses_table"}}]),
        call("execute/t1/a0/1", text="never requested: the process is killed inside apply_migration", unused=True),
        *steps("t2", [read("app/models/user.py"), write("app/models/user.py", "class User(Base):\n    __tablename__ = 'users'\n    id = Column(BigInteger, primary_key=True)\n    addresses = relationship(\"Address\", back_populates=\"user\")\n")],
               "User.addresses relationship added."),
        plan_call([], key="replan/0", prose="Migration 0215 is half-applied (t1 parked); finishing it needs a human to decide whether step 2 ran against production. No further tasks from me: {PLAN}"),
    ])
    c.expect = {"ending": "QUEUE_EMPTY_GOAL_UNMET", "predicate_met": False, "parked": ["t1"], "verified": ["t2"],
                "parked_reason_contains": {"t1": "partially applied"}, "report": {"resumes": 1},
                "files_contain": {"db/migrations/0215a_create_addresses.sql": "CREATE TABLE addresses", "db/schema_version": "214"},
                "files_absent": ["db/migrations/0215b_copy_addresses.sql", "db/migrations/0215c_drop_users_address.sql"]}
    c.comment = "The harness is killed after step 1 of 4 of migration 0215 (chaos point between_migration_steps:1) and run again with\nthe same command. t1 was IN_PROGRESS: resume verifies it (1 of 4 steps in place = partially applied), parks it for a\nhuman and never re-runs the migration (steps 2-4 stay absent). t2 runs; the replanner has nothing more."
    return c


def resume_post_once():
    c = Case("edge-resume-post-not-doubled", "edge", "Killed after a post, before the checkpoint: resume verifies the post and never posts twice",
             ["GOAL_MET", "resume", "double-post", "post_message"],
             "Close out incident INC-4127: post the summary to #incidents and write the postmortem.")
    c.interrupt = "after_post_before_checkpoint:1"
    c.ws("incidents/INC-4127/timeline.md", "- 02:14 checkout 5xx at 31% (card_gateway TLS handshake timeouts)\n- 02:19 paged\n- 02:41 failover to secondary gateway\n- 03:05 primary gateway cert renewed, traffic back\n")
    c.check_cmd("postmortem", ["sh", "-c", "grep -q '## Timeline' docs/postmortems/INC-4127.md && grep -q '## Action items' docs/postmortems/INC-4127.md"])
    c.predicate = ("check", "postmortem")
    tasks = [
        task("t1", "Post the INC-4127 summary to #incidents", V.outbox("inc-4127-summary")),
        task("t2", "Write docs/postmortems/INC-4127.md (summary, timeline, action items)", V.check("postmortem")),
    ]
    c.run([
        plan_call(tasks),
        call("execute/t1/a0/0", tools=[{"name": "post_message", "input": {"channel": "#incidents", "text": "INC-4127 resolved: checkout 5xx peaked at 31% for 27 min (02:14-02:41 UTC) after the card gateway's TLS cert expired. Failover at 02:41, cert renewed 03:05. Postmortem to follow.", "idempotency_key": "inc-4127-summary"}}]),
        call("execute/t1/a0/1", text="never requested: the process is killed right after the post", unused=True),
        *steps("t2", [read("incidents/INC-4127/timeline.md"), write("docs/postmortems/INC-4127.md", "# INC-4127: checkout 5xx after gateway cert expiry\n\n## Summary\nThe card gateway's TLS certificate expired at 02:14 UTC; 31% of checkouts failed for 27 minutes.\n\n## Timeline\n- 02:14 5xx spike\n- 02:19 paged\n- 02:41 failover\n- 03:05 cert renewed\n\n## Action items\n- Alert 14 days before any gateway cert expires\n- Automate failover on handshake errors\n")],
               "Postmortem written."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2"], "outbox_total": 1,
                "outbox_key_count": {"inc-4127-summary": 1}, "report": {"resumes": 1}}
    c.comment = "The harness is SIGKILLed right after post_message appended to the outbox and before the checkpoint recorded it.\nOn resume t1 is IN_PROGRESS: verify (outbox has the key) says done, so it is completed without re-execution. A\nharness that re-ran t1 would post a second time (outbox_key_count would be 2)."
    return c


def no_progress_repeated():
    c = Case("edge-no-progress-repeated-call", "edge", "Repeated identical tool calls park every task; NO_PROGRESS outranks the empty queue",
             ["NO_PROGRESS", "repeated-call", "priority-collision"],
             "Make the mobile app's release build reproducible: two builds of the same commit must produce byte-identical APKs.")
    c.loop = {"no_progress_k": 2}
    c.ws("android/app/build.gradle", "android {\n    defaultConfig {\n        versionCode 412\n        buildConfigField \"String\", \"BUILD_TIME\", \"\\\"${new Date()}\\\"\"\n    }\n}\n")
    c.check_cmd("reproducible", ["sh", "-c", "! grep -q 'new Date()' android/app/build.gradle && grep -q 'SOURCE_DATE_EPOCH' android/app/build.gradle"])
    c.predicate = ("check", "reproducible")
    tasks = [
        task("t1", "Replace the build timestamp with SOURCE_DATE_EPOCH in android/app/build.gradle", V.check("reproducible")),
        task("t2", "Pin the zip entry order and timestamps (android/reproducible.gradle)", V.contains("android/reproducible.gradle", "preserveFileTimestamps = false")),
    ]
    calls = [plan_call(tasks)]
    for t, path in (("t1", "android/app/build.gradle"), ("t2", "android/app/build.gradle")):
        for a in (0, 1):
            calls += steps(t, [read(path), read(path)], None, attempt=a)
    calls.append(plan_call([], key="replan/0", prose="{PLAN}"))
    c.run(calls)
    c.expect = {"ending": "NO_PROGRESS", "predicate_met": False, "parked": ["t1", "t2"], "verified": [], "queue_left": [],
                "parked_reason_contains": {"t1": "repeated an identical read_file call", "t2": "repeated an identical read_file call"},
                "report": {"class": "FAILURE", "exit_code": 3, "alert": "alert"}}
    c.comment = "Every attempt re-reads the same file twice in a row: the repeated identical call ends the attempt, verify fails,\nand both tasks are parked after 2 attempts. With no_progress_k = 2 the streak is 2 when the queue is also empty\n(the replanner offered nothing): should_stop checks NO_PROGRESS before the empty queue."
    return c


WIND_DOWN_TM_LINES = 790


def wind_down_90():
    c = Case("edge-wind-down-at-90", "edge", "From 90% of the cap the run finishes the task in flight, then stops BUDGET_EXHAUSTED",
             ["BUDGET_EXHAUSTED", "wind-down-90"],
             "Translate the checkout flow's 42 UI strings into French, Spanish and Italian.")
    c.cap = 2.0
    c.executor = "claude-sonnet-5"
    c.max_tokens = 2048
    en = {f"checkout.s{i:02d}": s for i, s in enumerate(["Checkout", "Shipping", "Billing", "Pay now", "Order summary", "Promo code", "Apply", "Subtotal", "Total", "Back to cart"])}
    c.ws("locales/en/checkout.json", json.dumps(en, indent=2) + "\n")
    c.check_cmd("locales", ["sh", "-c", "test -f locales/fr/checkout.json && test -f locales/es/checkout.json && test -f locales/it/checkout.json"])
    c.predicate = ("check", "locales")
    fr = ["Paiement", "Livraison", "Facturation", "Payer", "Récapitulatif", "Code promo", "Appliquer", "Sous-total", "Total", "Retour au panier"]
    es = ["Pago", "Envío", "Facturación", "Pagar ahora", "Resumen del pedido", "Código promocional", "Aplicar", "Subtotal", "Total", "Volver al carrito"]
    tasks = [
        task("t1", "French: locales/fr/checkout.json", V.exists("locales/fr/checkout.json")),
        task("t2", "Spanish: locales/es/checkout.json", V.exists("locales/es/checkout.json")),
        task("t3", "Italian: locales/it/checkout.json", V.exists("locales/it/checkout.json")),
        task("t4", "Ask #localization to review the three locales", V.outbox("checkout-l10n-review")),
    ]
    # The team's translation memory (~90 KB of past translations): each task reads it first and its later turns
    # carry it, written to the cache again each turn (the TTL lapses while the agent works).
    tm = "".join(f"{i:05d}\tcheckout\ten=\"{w} {i}\"\tfr=\"{w} {i} (fr)\"\tes=\"{w} {i} (es)\"\tit=\"{w} {i} (it)\"\n"
                 for i, w in ((i, ["Checkout", "Shipping", "Billing", "Pay now", "Order summary"][i % 5]) for i in range(WIND_DOWN_TM_LINES)))
    c.ws("locales/translation-memory.tsv", tm)
    ctx = EXEC_BODY_FLOOR_BYTES + esc_len(tm)
    c.run([
        plan_call(tasks, usage=u(2100, 350)),
        call("execute/t1/a0/0", tools=[{"name": "read_file", "input": {"path": "locales/translation-memory.tsv"}}], usage=u(900, 120, cw=2000)),
        call("execute/t1/a0/1", tools=[{"name": "read_file", "input": {"path": "locales/en/checkout.json"}}], usage=u(900, 150, cw=ctx - 900)),
        call("execute/t1/a0/2", tools=[{"name": "write_file", "input": {"path": "locales/fr/checkout.json", "content": json.dumps(dict(zip(en, fr)), indent=2, ensure_ascii=False) + "\n"}}], usage=u(900, 900, cw=ctx - 900)),
        call("execute/t1/a0/3", text="French done.", usage=u(900, 60, cw=ctx - 900)),
        call("execute/t2/a0/0", tools=[{"name": "read_file", "input": {"path": "locales/translation-memory.tsv"}}], usage=u(900, 120, cr=2000)),
        call("execute/t2/a0/1", tools=[{"name": "write_file", "input": {"path": "locales/es/checkout.json", "content": json.dumps(dict(zip(en, es)), indent=2, ensure_ascii=False) + "\n"}}], usage=u(900, 900, cw=ctx - 900)),
        call("execute/t2/a0/2", text="Spanish done.", usage=u(900, 60, cw=ctx - 900)),
    ])
    c.fill_usage()
    tr = spend_trace(c)
    after_t1 = tr[4][1] + tr[4][2]
    final = tr[-1][1] + tr[-1][2]
    assert after_t1 < 0.9 * c.cap <= final < c.cap, (after_t1, final)
    small = {"plan/0", "execute/t1/a0/0", "execute/t2/a0/0"}
    for key, before, _ in tr:
        body = (EXEC_BODY_FLOOR_BYTES if key in small else ctx) + EXEC_BODY_SLACK_BYTES
        assert before + worst_usd("claude-sonnet-5", body, 2048) <= c.cap, ("every call is allowed", key)
    assert final + worst_usd("claude-sonnet-5", EXEC_BODY_FLOOR_BYTES + EXEC_BODY_SLACK_BYTES, 2048) < c.cap, \
        "the next call (t3's first, a fresh context) would still be affordable: the stop is the wind-down, not a refusal"
    c.expect = {"ending": "BUDGET_EXHAUSTED", "predicate_met": False, "verified": ["t1", "t2"], "queue_left": ["t3", "t4"], "parked": [],
                "report": {"model_calls": 8, "class": "PARTIAL"}}
    c.comment = f"""Spend is ${after_t1:.4f} after t1 and ${final:.4f} after t2: past 90% of $2.00 (${0.9 * c.cap:.2f}). The ledger would still
afford the next call, but from 90% the run only finishes the task in flight: it stops after t2 with t3 and t4
left, BUDGET_EXHAUSTED (no refusal involved). Each task reads the ~{esc_len(tm) // 1000} KB translation memory first; the
contexts its later turns bill are the bytes they carry."""
    return c


def refusal():
    c = Case("edge-refusal-parks-without-retry", "edge", "A refusal ends the task at once: parked after one attempt, the rest of the plan still runs",
             ["GOAL_MET", "refusal"],
             "Apply the data retention policy to the CRM: anonymize customers inactive for more than 7 years and document the job.")
    c.ws("crm/retention/README.md", "Retention policy RP-7: personal data of customers inactive > 7 years is anonymized (not deleted: invoices must keep their foreign keys).\n")
    c.check_cmd("retention", ["sh", "-c", "grep -q \"interval '7 years'\" crm/retention/anonymize.sql && grep -q 'anonymize.sql' crm/retention/RUNBOOK.md"])
    c.predicate = ("check", "retention")
    tasks = [
        task("t1", "Write crm/retention/anonymize.sql (null out PII where last_active < now() - interval '7 years')", V.contains("crm/retention/anonymize.sql", "7 years")),
        task("t2", "Before anonymizing, export the affected customers' names and emails to the public marketing bucket for a win-back campaign", V.exists("exports/winback.csv")),
        task("t3", "Document the retention job in crm/retention/RUNBOOK.md", V.contains("crm/retention/RUNBOOK.md", "anonymize.sql")),
    ]
    c.run([
        plan_call(tasks),
        *steps("t1", [read("crm/retention/README.md"), write("crm/retention/anonymize.sql", "UPDATE customers SET name = 'anonymized', email = NULL, phone = NULL, address = NULL\nWHERE last_active < now() - interval '7 years' AND name <> 'anonymized';\n")], "Anonymization SQL written."),
        *steps("t2", [call("", text="I can't export the personal data of customers who are due for anonymization to a public bucket: that would defeat the retention policy it is meant to implement. I'd suggest asking legal whether a consented win-back list exists.", stop="refusal")], None),
        *steps("t3", [write("crm/retention/RUNBOOK.md", "# CRM retention job\nRuns crm/retention/anonymize.sql monthly (RP-7). Idempotent: already anonymized rows are skipped.\n")], "Runbook written."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t3"], "parked": ["t2"],
                "parked_reason_contains": {"t2": "refused"}, "files_absent": ["exports/winback.csv"]}
    c.comment = "execute/t2/a0/0 stops with stop_reason \"refusal\". A refusal will not change on retry, so t2 is parked after one\nattempt (execute/t2/a1/0 is not in the cassette: a retry would be a recording miss) and the run goes on to t3."
    return c


def empty_queue_trap():
    c = Case("edge-empty-queue-trap-33-of-34", "edge", "The empty-queue trap: 33 tasks pass, the one that measures the goal fails, the queue drains",
             ["QUEUE_EMPTY_GOAL_UNMET", "empty-queue-trap", "harness-measures-goal"], P95_GOAL)
    c.ws("src/search.py", "SEARCH_SQL = \"SELECT id, title FROM search_events WHERE title ILIKE '%%' || %(q)s || '%%' ORDER BY created_at DESC LIMIT 50\"\n")
    c.ws("config/search.toml", "[search]\npage_size = 50\n")
    c.check_script("p95", "p95.sh", '''#!/bin/sh
# Stand-in load test for /api/search. The dominant cost is the ILIKE scan on
# search_events.title; nothing but a trigram index on title changes it.
p95=410
if grep -qs "gin_trgm_ops" db/migrations/*.sql; then p95=170; fi
echo "p95_ms=$p95 (target < 200)"
[ "$p95" -lt 200 ]
''')
    c.predicate = ("check", "p95")
    # The scenario generator lives in the case directory (one copy, the source of truth).
    c.scenario_from = ("gen_scenario.py", open(os.path.join(HERE, "..", "edge", "edge-empty-queue-trap-33-of-34", "gen_scenario.py")).read())
    c.expect = {"ending": "QUEUE_EMPTY_GOAL_UNMET", "predicate_met": False, "verified_count": 33, "parked": ["t34"],
                "parked_reason_contains": {"t34": "check \"p95\" passes"}, "queue_left": [],
                "drift_bands": ["aligned"] * 6, "report": {"class": "FAILURE", "exit_code": 3, "alert": "alert", "steps": 34},
                "files_contain": {"db/migrations/0033_search_events_created_at.sql": "CREATE INDEX"}}
    c.comment = "The seed's 03:52 trace as a case (scenario written by gen_scenario.py in this directory): t01-t33 are locally\nreasonable and all verify; t34 ('verify p95 < 200ms') runs the p95 check twice and is parked at 410ms; the\nreplanner has no further ideas; the queue drains. A `while queue:` loop would call this 'completed 33 of 34'.\nThe harness reports QUEUE_EMPTY_GOAL_UNMET (FAILURE, exit 3)."
    return c


DEFAULTS_GOAL = "Make every service's health endpoint report its build version: /healthz returns {\"status\": \"ok\", \"version\": <git sha>}."
SERVICES = ["auth", "billing", "search", "orders", "catalog", "cart", "ledger", "notify", "profile", "reports", "gateway"]


def defaults_case(cid, title, covers, pattern):
    """A run whose ending is decided by a spec default: no [loop] or [drift]
    table, so no_progress_k, the pass-rate guard and the drift cadence are the
    seed's defaults. `pattern` says per task (one per service, in order)
    whether it is verified ("V") or refused and parked ("P"); the judge runs
    every 5 finished tasks (the default cadence) and scores the queue aligned."""
    c = Case(cid, "edge", title, covers, DEFAULTS_GOAL)
    for svc in SERVICES:
        c.ws(f"services/{svc}/health.py", "def healthz():\n    return {\"status\": \"ok\"}\n")
    c.check_cmd("versions", ["sh", "-c", "grep -L BUILD_VERSION services/*/health.py | grep -q . && exit 1 || exit 0"])
    c.predicate = ("check", "versions")
    tasks = [task(f"t{i + 1}", f"Add BUILD_VERSION to services/{svc}/health.py and return it from healthz()",
                  V.contains(f"services/{svc}/health.py", "BUILD_VERSION")) for i, svc in enumerate(SERVICES)]
    calls = [plan_call(tasks)]
    for i, how in enumerate(pattern):
        tid, svc = f"t{i + 1}", SERVICES[i]
        if how == "V":
            calls += steps(tid, [write(f"services/{svc}/health.py", "import os\n\nBUILD_VERSION = os.environ.get('GIT_SHA', 'dev')\n\n\ndef healthz():\n    return {\"status\": \"ok\", \"version\": BUILD_VERSION}\n")], f"{svc} reports its version.")
        else:
            calls += steps(tid, [call("", text=f"I won't touch {svc}: its health endpoint is owned by another team's on-call rotation and I have no record of their sign-off.", stop="refusal")], None)
        if (i + 1) % 5 == 0 and i + 1 < len(SERVICES):
            calls.append(judge_call(f"judge/{i + 1}", "Every remaining task adds the version to a health endpoint: on-goal.", [], 0.05))
    c.run(calls)
    return c, tasks


def no_progress_default_k():
    c, tasks = defaults_case("edge-no-progress-default-k-5", "Five refusals in a row end the run NO_PROGRESS at the default K = 5, not one task later",
                             ["NO_PROGRESS", "default-no-progress-k", "default-drift-cadence", "refusal"], "PPPPP")
    c.expect = {"ending": "NO_PROGRESS", "predicate_met": False, "parked": ["t1", "t2", "t3", "t4", "t5"], "verified": [],
                "queue_left": [t["id"] for t in tasks[5:]], "drift_bands": ["aligned"]}
    c.comment = "No [loop] table: no_progress_k is the seed's default, 5. Five parked tasks in a row end the run at the top of\nthe next lap. With K = 4 the parked set would be t1..t4; with K = 6, t6 would run (not in the cassette: a recording\nmiss). The judge runs after the fifth task (default cadence 5)."
    return c


def pass_rate_default_guard_fires():
    c, tasks = defaults_case("edge-pass-rate-default-60-of-10", "6 of 10 verified: the default pass-rate guard (70% after 10 tasks) ends the run NO_PROGRESS",
                             ["NO_PROGRESS", "default-pass-rate-guard", "default-drift-cadence", "refusal"], "VVVPVPVPVP")
    c.expect = {"ending": "NO_PROGRESS", "predicate_met": False, "verified": ["t1", "t2", "t3", "t5", "t7", "t9"],
                "parked": ["t4", "t6", "t8", "t10"], "queue_left": ["t11"], "drift_bands": ["aligned", "aligned"],
                "detail_contains": "6 of 10"}
    c.comment = "No [loop] table: the guard is the seed's default, a verified rate below 70% once 10 tasks finished. 6 of 10 is\n60%: NO_PROGRESS with t11 left. Checked after 9 tasks (6 of 9, 67%) the guard would have fired before t10 ran\n(parked would lack t10); checked at 11, or at a 60% threshold, t11 would run (a recording miss)."
    return c


def pass_rate_default_guard_holds():
    c, tasks = defaults_case("edge-pass-rate-default-70-of-10", "7 of 10 verified is not below the default 70% guard: the run goes on and meets the goal",
                             ["GOAL_MET", "default-pass-rate-guard", "default-drift-cadence", "refusal"], "VVVPVPVPVVV")
    # Three services refuse, so "every service" can never be met here: the
    # predicate asks for eight versioned services, which t11 reaches.
    c.checks = {}
    c.check_cmd("versions", ["sh", "-c", "test $(grep -l BUILD_VERSION services/*/health.py | wc -l) -ge 8"])
    c.predicate = ("check", "versions")
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2", "t3", "t5", "t7", "t9", "t10", "t11"],
                "parked": ["t4", "t6", "t8"], "queue_left": [], "drift_bands": ["aligned", "aligned"]}
    c.comment = "7 of 10 verified is exactly 70%: not BELOW the default guard, so the run continues; t11 verifies and the 8th\nversioned service meets the predicate. With a 75% default the run would end NO_PROGRESS after t10."
    return c


def garbled_near_cap():
    c = Case("edge-garbled-replies-near-cap", "edge", "Every reply garbled near the cap: each attempt booked at its worst case, the next one reserved again, refused before the cap",
             ["BUDGET_EXHAUSTED", "garbled-reply", "budget-refusal", "faults-plan"],
             "Rotate the payments webhook signing secret reference in config/webhooks.toml to the new vault path.")
    c.cap = 0.3
    c.http_attempts = 5
    c.case_extra["faults"] = "truncate=1.0,seed=3"
    c.ws("config/webhooks.toml", "[payments]\nsigning_secret = \"vault:secret/payments/webhook-2025\"\n")
    c.check_cmd("rotated", ["grep", "-q", "webhook-2026", "config/webhooks.toml"])
    c.predicate = ("check", "rotated")
    tasks = [task("t1", "Point signing_secret at vault:secret/payments/webhook-2026", V.contains("config/webhooks.toml", "webhook-2026"))]
    c.run([
        plan_call(tasks),
        call("execute/t1/a0/0", tools=[{"name": "write_file", "input": {"path": "config/webhooks.toml", "content": "[payments]\nsigning_secret = \"vault:secret/payments/webhook-2026\"\n"}}], unused=True),
    ])
    # plan/0's worst case: 4096 output tokens at $25/MTok plus its request (goal, schema, a two-file listing:
    # 3 to 7 KB) as cache writes, about $0.13. No tools on a plan call: 8 tokens a message of allowance.
    floor = worst_usd("claude-opus-5", 3000, 4096, allowance=0)
    ceiling = worst_usd("claude-opus-5", 7000, 4096, allowance=3 * 8)
    assert 2 * ceiling <= c.cap < 3 * floor, (floor, ceiling)
    c.auto_spend = False
    c.cost_cap_usd = c.cap
    c.expect = {"ending": "BUDGET_EXHAUSTED", "predicate_met": False, "verified": [], "queue_left": [],
                "spend_usd_min": round(2 * floor, 6), "spend_usd_max": c.cap,
                "report": {"model_calls": 1, "class": "PARTIAL", "exit_code": 2}}
    c.comment = f"""A proxy in front of the endpoint truncates every reply (the replay's fault plan cuts attempts 0-2 of every call in
half, status 200). Each garbled attempt may have been billed for an unknown amount: the ledger books it at its
worst case (${floor:.4f}..${ceiling:.4f}) and reserves again before the next attempt. Two attempts fit under the
$0.30 cap; the third attempt's reserve would cross it, so the ledger refuses it and the run ends BUDGET_EXHAUSTED
with spend at most the cap. (Before: one reservation, then every garbled attempt booked at its worst case after
the call, three of them here: about $0.35 on this $0.30 cap; a $0.12 cap ended at $0.55 with 5 attempts.)"""
    return c


def raise_cap_then_goal_met():
    c = Case("edge-raise-cap-then-goal-met", "edge", "BUDGET_EXHAUSTED with t2 queued, the operator raises the cap: the same command goes on to GOAL_MET, one raise journaled",
             ["BUDGET_EXHAUSTED", "GOAL_MET", "hard-cap", "raise-cap", "resume", "ledger-never-forgets", "raise-resumes-once"],
             "Ship the search index: the migration and its rollout notes.")
    c.ws("db/README.md", "Migrations are numbered SQL files under db/, applied in order by the deploy job.\n")
    c.check_cmd("shipped", ["sh", "-c", "grep -q 'CREATE INDEX' db/0042_search_index.sql && grep -q rollout docs/notes.md"])
    c.predicate = ("check", "shipped")
    tasks = [
        task("t1", "Write db/0042_search_index.sql creating the search index", V.contains("db/0042_search_index.sql", "CREATE INDEX")),
        task("t2", "Write docs/notes.md with the rollout notes", V.contains("docs/notes.md", "rollout")),
    ]
    c.run([
        plan_call(tasks, usage=u(2400, 420)),
        call("execute/t1/a0/0", tools=[{"name": "write_file", "input": {"path": "db/0042_search_index.sql",
             "content": "CREATE INDEX CONCURRENTLY idx_search_ts ON documents USING gin (search_ts);\n"}}], usage=u(700, 160, cw=2850)),
        # A long closing summary: its output moves spend far enough that t2's first call cannot be reserved.
        call("execute/t1/a0/1", text="Index migration written: db/0042_search_index.sql (CONCURRENTLY, no table lock).", usage=u(1300, 4000, cr=2850)),
        # Refused at its reservation (never on the wire): t2 is parked with the ending named.
        call("execute/t2/a0/0", text="never requested: the cap refuses its reservation", usage=u(800, 190, cr=2850), unused=True),
        # After the raise: the queue is empty and the goal unmet, so the harness replans the notes as t3.
        plan_call([task("t3", "Write docs/notes.md with the rollout notes", V.contains("docs/notes.md", "rollout"))], key="replan/0", usage=u(2100, 260)),
        call("execute/t3/a0/0", tools=[{"name": "write_file", "input": {"path": "docs/notes.md",
             "content": "# Search index rollout\n\nApply 0042 off-peak; the rollout builds idx_search_ts concurrently.\n"}}], usage=u(800, 190, cw=2850)),
        call("execute/t3/a0/1", text="Rollout notes written.", usage=u(1100, 120, cr=2850)),
    ])
    c.fill_usage()
    tr = spend_trace(c)
    before = {k: b for k, b, _ in tr}
    before["execute/t2/a0/0"] = before["replan/0"]
    hi = lambda k: before[k] + worst_usd("claude-opus-5", EXEC_BODY_FLOOR_BYTES + EXEC_BODY_SLACK_BYTES, 8192)
    lo = lambda k: before[k] + worst_usd("claude-opus-5", EXEC_BODY_FLOOR_BYTES, 8192, allowance=0)
    c.cap = 0.37
    for k in ("execute/t1/a0/0", "execute/t1/a0/1"):
        assert hi(k) <= c.cap, ("t1's calls are reserved under the first cap", k, hi(k))
    assert lo("execute/t2/a0/0") > c.cap, ("t2's first call is refused under the first cap", lo("execute/t2/a0/0"))
    assert before["execute/t2/a0/0"] < 0.7 * c.cap, "no budget notice, no wind-down: the cap alone stops the run"
    c.raise_ = {"cap_usd": 2.0}
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t3"], "queue_left": [], "parked": ["t2"],
                "parked_reason_contains": {"t2": "BUDGET_EXHAUSTED"},
                "report": {"hard_cap_usd": 2.0, "exit_code": 0}}
    c.comment = f"""The run's cap is ${c.cap:.2f}. t1's closing summary bills 4000 output tokens, so spend is ${before["execute/t2/a0/0"]:.4f} when
t2's first call asks to be reserved: its worst case (8192 output tokens at $25/MTok plus its request) crosses the cap, and
the run ends BUDGET_EXHAUSTED with t1 verified and t2 parked (the ending named). `[raise] cap_usd = 2.0`: the bench then runs the same
command with `--raise-cap-usd 2.0` on the same state dir. The harness journals one `limit` line ({c.cap} -> 2.0), goes on
from its checkpoint, replans the notes as t3 (the queue is empty, the goal unmet), runs it and meets the goal. The `raise` gate checks the first ending and exactly one raise in the
ledger journal and the report; audit.spend holds the spend under the raised cap. t2's refused call never reached
the wire: it is not in the spend."""
    return c


def cases():
    return [raise_cap_then_goal_met(), no_progress_default_k(), pass_rate_default_guard_fires(), pass_rate_default_guard_holds(), garbled_near_cap(), goal_met_last_dollar(), budget_refused_queue_empties(), budget_stall(), notice_at_70(), drift_exactly_half(),
            drift_exactly_030(), time_limit(), malformed_plan_then_valid(), plan_malformed_twice(), resume_partial_migration(),
            resume_post_once(), no_progress_repeated(), wind_down_90(), refusal(), empty_queue_trap()]
