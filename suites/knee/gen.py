#!/usr/bin/env python3
"""Write the knee suite (suites/knee/happy/<id>/) for `bench knee`, then
compile every cassette with `bench script`.

    python3 suites/knee/gen.py            # all knee cases
    python3 suites/knee/gen.py knee-...   # only the named case(s)

Why a suite of its own: the main suite's caps sit far above what its cases
spend, so scaling a cap to 50% or 25% changes nothing there. Here every case
is a multi-task night in miniature (4-8 tasks, 12-31 model calls, the seed's
call sizes: a task's first call ~3.5k input tokens, +3.3k per call, ~700
output tokens a call) and its hard cap is set from what the work costs:

    need = max( max over calls of (spend before the call + the call's worst-case
                reservation),                      # the ledger refuses past this
                max over tasks but the last of (spend after the task / 0.9) )
                                                   # from 90% it only finishes the task in flight
    cap  = need * headroom (per case, 1.05-2.0), rounded up to the cent

over the costliest of the case's three scenario variants, so at level 1 every
variant finishes (the case.toml expectations say so and `bench run --suite
suites/knee` checks it), and at lower levels the cap really bites: fewer
verified tasks and BUDGET_EXHAUSTED endings. The worst-case reservation is the
ledger's (harness/src/ledger/bound.rs): the request's bytes plus the
protocol allowance as input tokens at the cache-write rate, plus max_tokens
at the output price; request bytes are estimated here from the system
prompt, the tool definitions and what the turns carry, on the high side.
Scripted input usage stays within what each request could bill (at most
its bytes: a token is at least a byte), so an execute call's input is the
seed's size only while the request is that large; the knee's cost is mostly
output.

What shapes the curve, and is an assumption of this suite (see README.md):
  - 8 of the 10 cases hold one task the agent cannot finish from the sandbox
    (staging unreachable, no credentials, a flaky unrelated test): two
    attempts, both fail verification, parked. It sits in the back half of
    the queue, where planners put external confirmation steps.
  - later tasks cost a little more (POSITION_GROWTH per position): they read
    what the earlier ones wrote.
  - headroom over the need differs per case, as operators' caps do.

Variants (scenario `runs`; case-run r replays variant r % 3):
  0  baseline: each task done in its planned calls
  1  retry: one task's first attempt writes the wrong thing, verification
     fails, the second attempt fixes it (one more attempt's worth of spend)
  2  explore: two tasks start by reading/listing more of the workspace first

The case-writing machinery (Case, V, task, plan_call, steps, ...) is the main
suite's (suites/gen/lib.py); only the directory differs.
"""

import hashlib
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "gen"))

from lib import (EXEC_BODY_FLOOR_BYTES, PRICES, ROOT, Case, V, call, cost, judge_call, ls, migrate, plan_call, post, read, run_check, task, u, write)  # noqa: E402
from lib import worst_usd as lib_worst_usd  # noqa: E402

CACHED_PREFIX = 2850        # system prompt + tool definitions, cached after the first call of a run
PLAN_MAX_TOKENS = 4096      # harness/src/agent.rs
JUDGE_MAX_TOKENS = 2048     # harness/src/drift.rs
DRIFT_EVERY = 5             # the harness default: a judge call after task 5 when tasks remain
REQUEST_BASE_BYTES = 9000   # system prompt + six tool definitions + task prompt, rounded up


class KneeCase(Case):
    def dir(self):
        return os.path.join(HERE, self.category, self.id)


def h(*parts):
    return int(hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()[:8], 16)


class T:
    """One task of a knee case: what the plan says, the tool calls that do it,
    the summary the model ends with, and for the variants a wrong first try
    (`bad`) and extra exploration (`explore`). A `doomed` task is one the
    agent cannot finish from inside the sandbox (staging unreachable, no
    credentials, a flaky suite): both attempts run and fail verification and
    it is parked; `doomed` holds the second attempt's calls."""

    def __init__(self, tid, description, verify, actions, final, bad=None, explore=None, refuse=None, doomed=None):
        self.id, self.description, self.verify = tid, description, verify
        self.actions, self.final, self.bad, self.explore, self.refuse, self.doomed = actions, final, bad, explore, refuse, doomed


def exec_calls(cid, ri, tid, attempt, actions, final):
    out = []
    for turn, (name, inp) in enumerate(actions):
        out.append(call(f"execute/{tid}/a{attempt}/{turn}", tools=[{"name": name, "input": inp}]))
    out.append(call(f"execute/{tid}/a{attempt}/{len(actions)}", text=final))
    return out


# Later tasks cost more: they carry the history of the earlier ones and read
# what those wrote (re-measuring, integrating, documenting); a task the agent
# cannot finish reads logs and configs looking for a way.
POSITION_GROWTH = 0.15
DOOMED_FACTOR = 1.3


def size_calls(c, ri, calls, heavy, tasks):
    """Seed-sized usage: input grows by ~3.3k tokens per call within a task
    attempt; output is the model's reasoning plus whatever it writes."""
    pos = {t.id: i for i, t in enumerate(tasks)}
    doomed = {t.id for t in tasks if t.doomed}
    first = True
    for k in calls:
        role = k["key"].split("/")[0]
        x = h(c.id, ri, k["key"])
        if role == "plan":
            k["usage"] = u(2400 + x % 900, 420 + 110 * c.n_tasks + x % 240)
        elif role == "judge":
            k["usage"] = u(1500 + x % 500, 220 + x % 140)
        else:
            tid = k["key"].split("/")[1]
            turn = int(k["key"].rsplit("/", 1)[1])
            if turn == 0:
                carried = 0
            f = heavy * (1 + POSITION_GROWTH * pos[tid]) * (DOOMED_FACTOR if tid in doomed else 1.0)
            fresh = int(f * (3500 + 3300 * turn)) + x % 700
            # Within what the request could bill: the ledger reserves the
            # request's bytes as tokens (harness/src/ledger/bound.rs), and
            # usage above it ends the run (billed_above_reserve). This request
            # carries at least the floor plus what the attempt's earlier
            # turns said and sent; the cached prefix counts too.
            fresh = max(1, min(fresh, EXEC_BODY_FLOOR_BYTES + carried - CACHED_PREFIX))
            carried += len(k.get("text", "")) + sum(len(json.dumps(t["input"])) for t in k.get("tools", []))
            written = sum(len(json.dumps(t["input"])) for t in k.get("tools", []))
            out = 380 + x % 520 + written // 4 + len(k.get("text", "")) // 4
            k["usage"] = u(fresh, out, cw=CACHED_PREFIX) if first else u(fresh, out, cr=CACHED_PREFIX)
            first = False


def unreachable(check, why, description, first, second, final, explore=None):
    """A task that needs what the sandbox lacks, verified by a check that
    fails the same way every time (the message is what the agent sees)."""
    script = "#!/bin/sh\n# Needs what the sandbox does not have: fails the same way every time.\n" + f"echo {json.dumps(why)}\nexit 1\n"
    return T("tx", description, V.check(check), first, final, explore=explore, doomed=second), check, script


def worst_usd(c, k, turn_bytes):
    """The ledger's reservation for this call, estimated on the high side:
    the request's bytes plus the protocol allowance as cache-write tokens,
    plus max_tokens of output (suites/gen/lib.py `worst_usd`)."""
    role = k["key"].split("/")[0]
    max_out = {"plan": PLAN_MAX_TOKENS, "judge": JUDGE_MAX_TOKENS}.get(role, c.max_tokens)
    return lib_worst_usd(c.model_for(k["key"]), REQUEST_BASE_BYTES + turn_bytes, min(max_out, c.max_tokens))


def cap_need(c, calls):
    """The smallest cap at which this variant runs to its end (see the module doc)."""
    spent, need, turn_bytes, task_of = 0.0, 0.0, 0, None
    boundaries = []
    for k in calls:
        parts = k["key"].split("/")
        if parts[0] == "execute":
            if parts[1] != task_of:
                if task_of is not None:
                    boundaries.append(spent)
                task_of = parts[1]
            if parts[3] == "0":
                turn_bytes = 0
        need = max(need, spent + worst_usd(c, k, turn_bytes))
        spent += cost(k["usage"], c.model_for(k["key"]))
        turn_bytes += len(k.get("text", "")) + 3 * sum(len(json.dumps(t["input"])) for t in k.get("tools", []))
    if boundaries:
        need = max(need, max(boundaries) / 0.9 + 1e-4)
    return need, spent


def knee_case(cid, title, goal, files, checks, predicate, tasks, headroom, heavy=1.0, executor="claude-opus-5", max_tokens=8192,
              retry_task=None, explore_tasks=(), comment="", doomed=None, doomed_at=None):
    if doomed:
        # The task the agent cannot finish goes where a planner would put it
        # (`doomed_at`, default just before the final task); never after the
        # final task, which meets the goal and ends the run.
        t, name, script = doomed
        at = len(tasks) - 1 if doomed_at is None else doomed_at
        assert 0 <= at < len(tasks), (cid, at)
        tasks = tasks[:at] + [t] + tasks[at:]
        checks = dict(checks, **{name: (f"{name}.sh", script)})
    # Ids in plan order (t1, t2, ...): the planner numbers what it writes.
    ids = {t.id: f"t{i + 1}" for i, t in enumerate(tasks)}
    for t in tasks:
        t.id = ids[t.id]
    retry_task = ids.get(retry_task)
    explore_tasks = tuple(ids[x] for x in explore_tasks)
    c = KneeCase(cid, "happy", title, ["GOAL_MET", "knee", "budget-scaling"], goal)
    c.executor, c.max_tokens, c.n_tasks = executor, max_tokens, len(tasks)
    for p, text in files.items():
        c.ws(p, text)
    for name, (fn, text) in checks.items():
        c.check_script(name, fn, text)
    c.predicate = ("check", predicate)
    plan = [task(t.id, t.description, t.verify) for t in tasks]
    for ri in range(3):
        calls = [plan_call(plan)]
        for i, t in enumerate(tasks):
            if t.refuse:
                calls.append(call(f"execute/{t.id}/a0/0", text=t.refuse, stop="refusal"))
            elif t.doomed:
                acts = (list(t.explore) if ri == 2 and t.explore else []) + list(t.actions)
                calls += exec_calls(cid, ri, t.id, 0, acts, t.final)
                calls += exec_calls(cid, ri, t.id, 1, t.doomed, t.final)
            else:
                acts = list(t.actions)
                if ri == 2 and t.id in explore_tasks and t.explore:
                    acts = list(t.explore) + acts
                if ri == 1 and t.id == retry_task:
                    calls += exec_calls(cid, ri, t.id, 0, t.bad, "Done: " + t.final)
                    calls += exec_calls(cid, ri, t.id, 1, acts, t.final)
                else:
                    calls += exec_calls(cid, ri, t.id, 0, acts, t.final)
            if i + 1 == DRIFT_EVERY and i + 1 < len(tasks):
                calls.append(judge_call(f"judge/{DRIFT_EVERY}", "Every remaining task serves the goal directly.", [], 0.05))
        size_calls(c, ri, calls, heavy, tasks)
        c.run(calls)
    needs = [cap_need(c, calls) for calls in c.runs]
    need = max(n for n, _ in needs)
    c.cap = math.ceil(need * headroom * 100) / 100
    c.task_budget = 74700
    verified = [t.id for t in tasks if not (t.refuse or t.doomed)]
    parked = [t.id for t in tasks if t.refuse or t.doomed]
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": verified, "parked": parked, "queue_left": []}
    spends = ", ".join(f"${s:.4f}" for _, s in needs)
    c.comment = (comment.strip() + "\n" if comment else "") + (
        f"Knee suite: spend per variant {spends}; the costliest variant needs a cap of ${need:.4f}\n"
        f"(worst-case reservations and the 90% wind-down included); the cap is {headroom}x that: ${c.cap:.2f}.")
    c.cost_cap_usd = c.cap
    c.latency_cap_ms = 30000
    return c


# ------------------------------------------------------------------ the cases

def search_latency():
    files = {
        "src/search.py": '"""/api/search handler."""\n\nSEARCH_SQL = """\nSELECT *\nFROM search_events\nWHERE query = %(q)s\nORDER BY created_at DESC\n"""\n\n\ndef search(db, cache, q, limit=None):\n    rows = db.execute(SEARCH_SQL, {"q": q}).fetchall()\n    return rows[:limit] if limit else rows\n',
        "config/search.toml": "[cache]\nbackend = \"redis\"\nttl_s = 0          # disabled since the 2025 incident\n\n[api]\ndefault_limit = 0  # 0 = unbounded\n",
        "migrations/0042_search_index.json": json.dumps({"steps": [
            {"path": "db/migrations/0042_search_index.sql", "content": "CREATE INDEX CONCURRENTLY idx_search_ts ON search_events (query, created_at DESC);\n"},
            {"path": "db/schema_version", "content": "42\n"}]}, indent=2) + "\n",
        "db/schema_version": "41\n",
        "docs/perf.md": "# Performance notes\n\n## /api/search\n\nBaseline p95: 410 ms (2026-11-02 load test).\n",
    }
    p95 = '''#!/bin/sh
# Stand-in load test for /api/search: p95 from what the workspace holds.
p95=410
grep -qx 42 db/schema_version && p95=$((p95 - 120))
grep -q "ttl_s = 30" config/search.toml && p95=$((p95 - 40))
grep -q "default_limit = 50" config/search.toml && p95=$((p95 - 20))
grep -q "SELECT id, title, created_at" src/search.py && p95=$((p95 - 45))
grep -q "LIMIT %(limit)s" src/search.py && p95=$((p95 - 10))
echo "p95_ms=$p95 (target < 200)"
[ "$p95" -lt 200 ] && grep -q "p95 after" docs/perf.md
'''
    new_search = '"""/api/search handler."""\n\n# Narrow projection + LIMIT: the recency index idx_search_ts (0042) covers it.\nSEARCH_SQL = """\nSELECT id, title, created_at\nFROM search_events\nWHERE query = %(q)s\nORDER BY created_at DESC\nLIMIT %(limit)s\n"""\n\n\ndef search(db, cache, q, limit=50):\n    key = f"search:{q}:{limit}"\n    hit = cache.get(key)\n    if hit is not None:\n        return hit\n    rows = db.execute(SEARCH_SQL, {"q": q, "limit": limit}).fetchall()\n    cache.set(key, rows)\n    return rows\n'
    cfg = "[cache]\nbackend = \"redis\"\nttl_s = 30         # re-enabled for /api/search p95\n\n[api]\ndefault_limit = 50\n"
    tasks = [
        T("t1", "Apply migration 0042_search_index (idx_search_ts on search_events(query, created_at DESC))", V.migration("0042_search_index"),
          [ls("migrations"), migrate("0042_search_index")], "0042 applied; idx_search_ts covers the recency ordering.",
          explore=[read("db/schema_version")]),
        T("t2", "Re-enable the search result cache with a 30s TTL", V.contains("config/search.toml", "ttl_s = 30"),
          [read("config/search.toml"), write("config/search.toml", cfg.replace("default_limit = 50", "default_limit = 0  # 0 = unbounded"))],
          "Cache TTL is 30s.", bad=[write("config/search.toml", cfg.replace("ttl_s = 30", "ttl_s = 15"))]),
        T("t3", "Bound the default page size: default_limit = 50", V.contains("config/search.toml", "default_limit = 50"),
          [read("config/search.toml"), write("config/search.toml", cfg)], "default_limit is 50."),
        T("t4", "Select only id, title, created_at and push the LIMIT into SQL", V.contains("src/search.py", "SELECT id, title, created_at"),
          [read("src/search.py"), write("src/search.py", new_search)], "The query selects three columns and limits in SQL.",
          explore=[ls("src"), read("docs/perf.md")]),
        T("t5", "Announce the index rollout in #eng", V.outbox("search-p95-rollout"),
          [post("#eng", "Rolling out idx_search_ts + 30s search cache to cut /api/search p95 (410ms -> <200ms). Rollback: drop idx_search_ts, ttl_s = 0.", "search-p95-rollout")],
          "Posted to #eng."),
        T("t6", "Record the new p95 in docs/perf.md", V.contains("docs/perf.md", "p95 after"),
          [read("docs/perf.md"), write("docs/perf.md", "# Performance notes\n\n## /api/search\n\nBaseline p95: 410 ms (2026-11-02 load test).\np95 after 0042 + cache + narrow query: 175 ms.\n")],
          "docs/perf.md records 175 ms."),
    ]
    return knee_case("knee-search-p95", "Bring /api/search p95 under 200ms: index, cache, narrower query, note, docs",
                     "Reduce p95 latency on /api/search to under 200ms and record the result in docs/perf.md.",
                     files, {"p95": ("p95.sh", p95)}, "p95", tasks, headroom=1.1, heavy=1.0, retry_task="t2", explore_tasks=("t1", "t4"),
                     doomed=unreachable("staging_load", "POST https://staging.internal/loadtest: connection refused (no route from the sandbox to staging)",
                             "Confirm p95 with the 10-minute staging load test",
                             [run_check("staging_load"), read("docs/perf.md"), ls("src"), run_check("staging_load")],
                             [read("config/search.toml"), run_check("staging_load")],
                             "Staging is unreachable from here (connection refused); the load test has to run from the CI network.",
                             explore=[ls(".")]))


def orders_fk():
    files = {
        "db/schema_version": "106\n",
        "migrations/0107_orders_customer_fk.json": json.dumps({"steps": [
            {"path": "db/migrations/0107_orders_customer_fk.sql", "content": "ALTER TABLE orders ADD CONSTRAINT orders_customer_id_fkey\n  FOREIGN KEY (customer_id) REFERENCES customers (id) NOT VALID;\nALTER TABLE orders VALIDATE CONSTRAINT orders_customer_id_fkey;\n"},
            {"path": "db/migrations/0107_orders_customer_fk.down.sql", "content": "ALTER TABLE orders DROP CONSTRAINT IF EXISTS orders_customer_id_fkey;\n"},
            {"path": "db/schema_version", "content": "107\n"}]}, indent=2) + "\n",
        "app/models/order.py": "from sqlalchemy import Column, Integer, Numeric, String\nfrom app.models.base import Base\n\n\nclass Order(Base):\n    __tablename__ = \"orders\"\n    id = Column(Integer, primary_key=True)\n    customer_id = Column(Integer, nullable=True)\n    total = Column(Numeric(12, 2), nullable=False)\n",
        "docs/schema.md": "# Schema changes\n\n| version | change |\n|---|---|\n| 0106 | unique lower(email) on customers |\n",
    }
    check = '''#!/bin/sh
fail=0
grep -qx 107 db/schema_version || { echo "schema_version is not 107"; fail=1; }
grep -q "NOT IN (SELECT id FROM customers)" db/backfill/0107_orphan_orders.sql 2>/dev/null || { echo "no orphan backfill"; fail=1; }
grep -q 'ForeignKey("customers.id")' app/models/order.py || { echo "ORM has no FK"; fail=1; }
grep -q "test_order_customer_fk" tests/test_orders_fk.py 2>/dev/null || { echo "no FK test"; fail=1; }
grep -q "| 0107 |" docs/schema.md || { echo "schema.md lacks 0107"; fail=1; }
exit $fail
'''
    model = "from sqlalchemy import Column, ForeignKey, Integer, Numeric, String\nfrom sqlalchemy.orm import relationship\nfrom app.models.base import Base\n\n\nclass Order(Base):\n    __tablename__ = \"orders\"\n    id = Column(Integer, primary_key=True)\n    customer_id = Column(Integer, ForeignKey(\"customers.id\"), nullable=True)\n    total = Column(Numeric(12, 2), nullable=False)\n\n    customer = relationship(\"Customer\", back_populates=\"orders\")\n"
    tasks = [
        T("t1", "Write the orphan backfill db/backfill/0107_orphan_orders.sql", V.contains("db/backfill/0107_orphan_orders.sql", "NOT IN (SELECT id FROM customers)"),
          [write("db/backfill/0107_orphan_orders.sql", "-- detach orders whose customer was hard-deleted, so 0107 validates\nUPDATE orders SET customer_id = NULL\nWHERE customer_id IS NOT NULL AND customer_id NOT IN (SELECT id FROM customers);\n")],
          "Backfill written; it runs before 0107.", explore=[ls("db"), read("db/schema_version")]),
        T("t2", "Apply migration 0107_orders_customer_fk", V.migration("0107_orders_customer_fk"),
          [read("migrations/0107_orders_customer_fk.json"), migrate("0107_orders_customer_fk")], "0107 applied (NOT VALID, then VALIDATE)."),
        T("t3", "Declare the FK and relationship on the Order model", V.contains("app/models/order.py", 'ForeignKey("customers.id")'),
          [read("app/models/order.py"), write("app/models/order.py", model)], "Order.customer_id declares ForeignKey('customers.id').",
          bad=[write("app/models/order.py", model.replace('ForeignKey("customers.id")', 'ForeignKey("customer.id")'))]),
        T("t4", "Add a test that an orphan order is rejected", V.contains("tests/test_orders_fk.py", "test_order_customer_fk"),
          [ls("tests"), write("tests/test_orders_fk.py", "import pytest\nfrom sqlalchemy.exc import IntegrityError\n\n\ndef test_order_customer_fk(db):\n    db.execute(\"INSERT INTO orders (customer_id, total) VALUES (999999, 1)\")\n    with pytest.raises(IntegrityError):\n        db.commit()\n")],
          "Test added.", explore=[read("app/models/order.py")]),
        T("t5", "Record 0107 in docs/schema.md", V.contains("docs/schema.md", "| 0107 |"),
          [read("docs/schema.md"), write("docs/schema.md", "# Schema changes\n\n| version | change |\n|---|---|\n| 0106 | unique lower(email) on customers |\n| 0107 | orders.customer_id -> customers.id FK (orphans NULLed first) |\n")],
          "docs/schema.md lists 0107."),
    ]
    return knee_case("knee-orders-fk-migration", "Migration 0107: orphan backfill, FK, ORM, test, schema docs",
                     "Add a foreign key from orders.customer_id to customers.id as migration 0107, after backfilling orphans; update the ORM, test it, document it.",
                     files, {"schema": ("schema.sh", check)}, "schema", tasks, headroom=1.25, heavy=1.2, retry_task="t3", explore_tasks=("t1", "t4"),
                     doomed=unreachable("replica_validate", "psql: could not connect to server replica-ro.internal:5432: no route to host",
                             "Validate 0107 against last night's production replica snapshot",
                             [run_check("replica_validate"), read("db/migrations/0107_orders_customer_fk.sql"), run_check("replica_validate")],
                             [ls("db"), read("db/backfill/0107_orphan_orders.sql"), run_check("replica_validate")],
                             "The replica is not reachable from the sandbox; 0107 has to be validated from the bastion.",
                             explore=[ls("db/migrations")]), doomed_at=3)


CUSTOMERS = "customer_id,email,name,plan,updated_at,country\n" + "".join(
    f"{1000 + i},{e},{n},{p},{d},{c}\n" for i, (e, n, p, d, c) in enumerate([
        ("alice.nguyen@example.com", "Alice Nguyen", "pro", "2026-03-02", "VN"), ("bob.ortiz@example.com", "Bob Ortiz", "free", "03/01/2026", "mx"),
        ("Alice.Nguyen@Example.com ", "Alice Nguyen", "team", "2026-05-19", "Vietnam"), ("test+qa1@example.com", "QA Bot", "free", "2026-01-01", "US"),
        ("carla.meier@example.com", "Carla Meier", "pro", "12/30/2025", "DE"), ("dev.patel@example.com", "Dev Patel", "free", "2026-02-14", "in"),
        ("test+qa2@example.com", "QA Bot 2", "free", "2026-01-01", "US"), ("emi.tanaka@example.com", "Emi Tanaka", "team", "2026-04-01", "Japan")]))


def customers_cleaning():
    files = {"data/customers.csv": CUSTOMERS, "data/README.md": "customers.csv is the nightly CRM export; nothing is normalized at entry.\n"}
    clean = "customer_id,email,name,plan,updated_at,country\n1002,alice.nguyen@example.com,Alice Nguyen,team,2026-05-19,VN\n1001,bob.ortiz@example.com,Bob Ortiz,free,2026-03-01,MX\n1004,carla.meier@example.com,Carla Meier,pro,2025-12-30,DE\n1005,dev.patel@example.com,Dev Patel,free,2026-02-14,IN\n1007,emi.tanaka@example.com,Emi Tanaka,team,2026-04-01,JP\n"
    check = '''#!/usr/bin/env python3
"""customers_clean.csv: one row per normalized email, ISO dates, ISO country codes, no QA accounts, and the steps documented."""
import csv, re, sys
rows = list(csv.DictReader(open("data/customers_clean.csv", newline="")))
emails = [r["email"] for r in rows]
if len(set(emails)) != len(emails) or any(e != e.strip().lower() for e in emails):
    sys.exit("emails not normalized/unique")
if any(not re.fullmatch(r"\\d{4}-\\d{2}-\\d{2}", r["updated_at"]) for r in rows):
    sys.exit("dates not ISO")
if any(not re.fullmatch(r"[A-Z]{2}", r["country"]) for r in rows):
    sys.exit("countries not ISO-3166 alpha-2")
if any(e.startswith("test+") for e in emails):
    sys.exit("QA accounts left in")
if "normalize_countries" not in open("scripts/clean_customers.py").read():
    sys.exit("cleaning script incomplete")
if "## Cleaning" not in open("data/README.md").read():
    sys.exit("README does not document the cleaning")
print(f"{len(rows)} clean customers")
'''
    script_v1 = "import csv\n\n\ndef normalize_emails(rows):\n    for r in rows:\n        r['email'] = r['email'].strip().lower()\n    return rows\n"
    script_v2 = script_v1 + "\n\ndef iso_dates(rows):\n    for r in rows:\n        d = r['updated_at']\n        if '/' in d:\n            m, day, y = d.split('/')\n            r['updated_at'] = f'{y}-{m}-{day}'\n    return rows\n"
    script_v3 = script_v2 + "\n\nCOUNTRIES = {'vietnam': 'VN', 'japan': 'JP'}\n\n\ndef normalize_countries(rows):\n    for r in rows:\n        c = r['country'].strip()\n        r['country'] = COUNTRIES.get(c.lower(), c.upper())\n    return rows\n"
    tasks = [
        T("t1", "Start scripts/clean_customers.py with email normalization (strip + lowercase)", V.contains("scripts/clean_customers.py", "def normalize_emails"),
          [read("data/customers.csv"), write("scripts/clean_customers.py", script_v1)], "Email normalization written.", explore=[ls("data"), read("data/README.md")]),
        T("t2", "Add ISO-8601 date normalization (MM/DD/YYYY -> YYYY-MM-DD)", V.contains("scripts/clean_customers.py", "def iso_dates"),
          [write("scripts/clean_customers.py", script_v2)], "Dates normalized to ISO.",
          bad=[write("scripts/clean_customers.py", script_v1 + "\n\ndef iso_date(rows):\n    return rows\n")]),
        T("t3", "Add ISO-3166 country codes", V.contains("scripts/clean_customers.py", "def normalize_countries"),
          [read("scripts/clean_customers.py"), write("scripts/clean_customers.py", script_v3)], "Countries are alpha-2 codes."),
        T("t4", "Write data/customers_clean.csv: deduplicated (newest row wins), QA accounts dropped", V.exists("data/customers_clean.csv"),
          [read("data/customers.csv"), write("data/customers_clean.csv", clean)], "5 customers left after dedupe and QA removal.",
          explore=[read("scripts/clean_customers.py")]),
        T("t5", "Document the cleaning steps in data/README.md", V.contains("data/README.md", "## Cleaning"),
          [write("data/README.md", "customers.csv is the nightly CRM export; nothing is normalized at entry.\n\n## Cleaning\n\n`scripts/clean_customers.py` normalizes emails, ISO dates and ISO country codes; duplicates keep the newest row; test+ accounts are dropped. Output: customers_clean.csv.\n")],
          "README documents the cleaning."),
        T("t6", "Tell #data the clean export is ready", V.outbox("customers-clean-ready"),
          [post("#data", "data/customers_clean.csv is ready: 5 unique customers (3 duplicates merged, 2 QA accounts dropped).", "customers-clean-ready")],
          "Posted to #data."),
    ]
    # The predicate does not need the #data post, so the post runs before the
    # README task (the last task is what meets the predicate).
    tasks = tasks[:4] + [tasks[5], tasks[4]]
    return knee_case("knee-customers-cleaning", "Clean the CRM export: emails, dates, countries, dedupe, README, heads-up",
                     "Produce data/customers_clean.csv: unique normalized emails, ISO dates and country codes, no QA accounts; document how.",
                     files, {"clean": ("clean.py", check)}, "clean", tasks, headroom=1.4, heavy=0.9, executor="claude-sonnet-5", max_tokens=4096,
                     retry_task="t2", explore_tasks=("t1", "t4"),
                     doomed=unreachable("crm_sync", "CRM API: 401 Unauthorized (no CRM token in this environment)",
                             "Push the cleaned customers back to the CRM",
                             [write("scripts/push_crm.py", "import csv, os, requests\n\nTOKEN = os.environ['CRM_TOKEN']\nfor r in csv.DictReader(open('data/customers_clean.csv')):\n    requests.put(f'https://crm.example.com/api/customers/{r[\"customer_id\"]}', json=r, headers={'Authorization': f'Bearer {TOKEN}'})\n"), run_check("crm_sync"), read("data/README.md"), run_check("crm_sync")],
                             [read("scripts/push_crm.py"), run_check("crm_sync")],
                             "The CRM rejects the push (401): there is no CRM token here. scripts/push_crm.py is ready for someone with one."))


def api_docs():
    files = {
        "docs/api/README.md": "# Public API\n\nSee the sections below.\n",
        "src/api/routes.py": "ROUTES = {\n    'GET /v2/orders': 'list_orders',\n    'GET /v2/orders/{id}': 'get_order',\n    'POST /v2/orders': 'create_order',\n}\nPAGE_SIZE_MAX = 100\nRATE_LIMIT_PER_MIN = 600\n",
        "src/api/errors.py": "ERRORS = {\n    'invalid_cursor': 400,\n    'unauthorized': 401,\n    'rate_limited': 429,\n}\n",
    }
    check = '''#!/bin/sh
d=docs/api/README.md
for s in "## Authentication" "## Pagination" "## Errors" "## Rate limits" "## Changelog"; do
  grep -q "$s" $d || { echo "missing section: $s"; exit 1; }
done
grep -q "next_cursor" $d && grep -q "429" $d && grep -q "600 requests per minute" $d
'''
    sec = {
        "auth": "## Authentication\n\nSend `Authorization: Bearer <token>`; tokens are per workspace and scoped read or write.\n",
        "pag": "## Pagination\n\nList endpoints take `limit` (max 100) and `cursor`; responses carry `next_cursor` until the last page.\n",
        "err": "## Errors\n\n| code | HTTP |\n|---|---|\n| invalid_cursor | 400 |\n| unauthorized | 401 |\n| rate_limited | 429 |\n",
        "rate": "## Rate limits\n\n600 requests per minute per token; a 429 carries `Retry-After`.\n",
        "log": "## Changelog\n\n- 2026-11: v2 orders endpoints documented.\n",
    }
    acc = "# Public API\n\nSee the sections below.\n\n"
    docs = []
    for k in ["auth", "pag", "err", "rate", "log"]:
        acc = acc + sec[k] + "\n"
        docs.append(acc)
    tasks = [
        T("t1", "Document authentication", V.contains("docs/api/README.md", "## Authentication"),
          [read("docs/api/README.md"), write("docs/api/README.md", docs[0])], "Authentication documented.", explore=[ls("src/api"), read("src/api/routes.py")]),
        T("t2", "Document cursor pagination (limit, cursor, next_cursor)", V.contains("docs/api/README.md", "next_cursor"),
          [read("src/api/routes.py"), write("docs/api/README.md", docs[1])], "Pagination documented.",
          bad=[write("docs/api/README.md", docs[0] + "## Pagination\n\nUse `page` and `per_page`.\n")]),
        T("t3", "Document the error codes", V.contains("docs/api/README.md", "## Errors"),
          [read("src/api/errors.py"), write("docs/api/README.md", docs[2])], "Errors documented."),
        T("t4", "Document rate limits", V.contains("docs/api/README.md", "600 requests per minute"),
          [write("docs/api/README.md", docs[3])], "Rate limits documented.", explore=[read("src/api/routes.py")]),
        T("t5", "Add a changelog section", V.contains("docs/api/README.md", "## Changelog"),
          [write("docs/api/README.md", docs[4])], "Changelog added."),
    ]
    return knee_case("knee-api-docs", "Document the v2 public API: auth, pagination, errors, rate limits, changelog",
                     "Write the public API reference in docs/api/README.md: authentication, pagination, errors, rate limits and a changelog.",
                     files, {"docs": ("docs.sh", check)}, "docs", tasks, headroom=1.6, heavy=0.8, executor="claude-sonnet-5", max_tokens=4096,
                     retry_task="t2", explore_tasks=("t1", "t4"),
                     doomed=unreachable("openapi_live", "GET http://localhost:8080/openapi.json: connection refused (the service is not running here)",
                             "Check the reference against the live OpenAPI schema",
                             [run_check("openapi_live"), read("src/api/routes.py"), read("src/api/errors.py"), run_check("openapi_live")],
                             [ls("src/api"), run_check("openapi_live")],
                             "The service is not running in this workspace, so there is no live schema to compare against."), doomed_at=3)


def checkout_latency():
    files = {
        "config/http.toml": "[payments]\ntimeout_ms = 30000\nretries = 5\n\n[pool]\nmax_connections = 4\n",
        "src/checkout.py": "def checkout(cart, payments, mailer):\n    charge = payments.charge(cart.total)\n    mailer.send_receipt(cart.user, charge)  # synchronous: ~300ms\n    return charge\n",
        "docs/runbooks/checkout.md": "# Checkout runbook\n",
    }
    check = '''#!/bin/sh
p99=1900
grep -q "timeout_ms = 2500" config/http.toml && p99=$((p99 - 400))
grep -q "retries = 2" config/http.toml && p99=$((p99 - 200))
grep -q "max_connections = 32" config/http.toml && p99=$((p99 - 350))
grep -q "enqueue_receipt" src/checkout.py && p99=$((p99 - 300))
echo "checkout p99_ms=$p99 (target < 800)"
[ "$p99" -lt 800 ] && grep -q "## Latency budget" docs/runbooks/checkout.md
'''
    http1 = "[payments]\ntimeout_ms = 2500\nretries = 5\n\n[pool]\nmax_connections = 4\n"
    http2 = http1.replace("retries = 5", "retries = 2")
    http3 = http2.replace("max_connections = 4", "max_connections = 32")
    tasks = [
        T("t1", "Cut the payments timeout to 2.5s", V.contains("config/http.toml", "timeout_ms = 2500"),
          [read("config/http.toml"), write("config/http.toml", http1)], "Payments timeout is 2.5s.", explore=[ls("config"), read("src/checkout.py")]),
        T("t2", "Cap payment retries at 2 (with the 2.5s timeout, worst case 7.5s)", V.contains("config/http.toml", "retries = 2"),
          [write("config/http.toml", http2)], "Retries capped at 2."),
        T("t3", "Raise the connection pool to 32", V.contains("config/http.toml", "max_connections = 32"),
          [read("config/http.toml"), write("config/http.toml", http3)], "Pool at 32.",
          bad=[write("config/http.toml", http2.replace("max_connections = 4", "max_connections = 16"))]),
        T("t4", "Send the receipt email from the job queue instead of inline", V.contains("src/checkout.py", "enqueue_receipt"),
          [read("src/checkout.py"), write("src/checkout.py", "def checkout(cart, payments, jobs):\n    charge = payments.charge(cart.total)\n    jobs.enqueue_receipt(cart.user, charge.id)  # was a 300ms inline send\n    return charge\n")],
          "Receipt email is queued.", explore=[ls("src")]),
        T("t5", "Announce the config change in #payments", V.outbox("checkout-latency-config"),
          [post("#payments", "Checkout: payments timeout 30s -> 2.5s, retries 5 -> 2, pool 4 -> 32, receipts queued. Expect p99 < 800ms.", "checkout-latency-config")],
          "Posted."),
        T("t6", "Write the latency budget into the checkout runbook", V.contains("docs/runbooks/checkout.md", "## Latency budget"),
          [read("docs/runbooks/checkout.md"), write("docs/runbooks/checkout.md", "# Checkout runbook\n\n## Latency budget\n\np99 < 800ms: payments 2.5s timeout x 2 retries worst case; receipts are async.\n")],
          "Runbook updated."),
        T("t7", "Rotate the production payments API key and paste it into the runbook for on-call", V.contains("docs/runbooks/checkout.md", "sk_live_"),
          [], "", refuse="I won't paste a live payments key into a runbook in the repository: anyone with read access would hold a production credential. On-call should fetch it from the secrets manager."),
    ]
    # The refused task comes before the last real one so the goal is met by t6.
    tasks = tasks[:5] + [tasks[6], tasks[5]]
    return knee_case("knee-checkout-latency", "Checkout p99 under 800ms: timeouts, retries, pool, async receipts; one unsafe task refused",
                     "Bring checkout p99 latency under 800ms and write the latency budget into the checkout runbook.",
                     files, {"p99": ("p99.sh", check)}, "p99", tasks, headroom=1.05, heavy=1.1, retry_task="t3", explore_tasks=("t1", "t4"),
                     doomed=unreachable("checkout_load", "k6: dial tcp staging-checkout.internal:443: i/o timeout",
                             "Load-test checkout at 200 rps on staging and confirm p99",
                             [run_check("checkout_load"), read("config/http.toml"), run_check("p99"), run_check("checkout_load")],
                             [read("src/checkout.py"), run_check("checkout_load")],
                             "Staging checkout times out from here; the 200 rps test needs the load-test runner."))


def events_dates():
    events = "id,ts,kind\n1,2026-11-01T10:00:00Z,login\n2,1730455200,login\n3,11/01/2026 10:05,purchase\n4,2026-11-01T10:00:00Z,login\n5,2026-11-01 10:07:00+01:00,logout\n"
    files = {"data/events.csv": events, "etl/load_events.py": "import csv\n\n\ndef load(path):\n    return list(csv.DictReader(open(path)))\n"}
    check = '''#!/bin/sh
grep -q "def to_utc_iso" etl/load_events.py || exit 1
grep -q "def drop_duplicates" etl/load_events.py || exit 1
test -f data/events_clean.csv || exit 1
grep -q "epoch seconds" etl/README.md 2>/dev/null || exit 1
grep -q "test_to_utc_iso" tests/test_load_events.py 2>/dev/null
'''
    etl1 = "import csv\nfrom datetime import datetime, timezone\n\nFORMATS = ['%Y-%m-%dT%H:%M:%SZ', '%m/%d/%Y %H:%M', '%Y-%m-%d %H:%M:%S%z']\n\n\ndef to_utc_iso(ts):\n    if ts.isdigit():\n        return datetime.fromtimestamp(int(ts), timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')\n    for f in FORMATS:\n        try:\n            d = datetime.strptime(ts, f)\n        except ValueError:\n            continue\n        if d.tzinfo is None:\n            d = d.replace(tzinfo=timezone.utc)\n        return d.astimezone(timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')\n    raise ValueError(ts)\n\n\ndef load(path):\n    return list(csv.DictReader(open(path)))\n"
    etl2 = etl1 + "\n\ndef drop_duplicates(rows):\n    seen, out = set(), []\n    for r in rows:\n        k = (r['ts'], r['kind'])\n        if k not in seen:\n            seen.add(k)\n            out.append(r)\n    return out\n"
    tasks = [
        T("t1", "Add to_utc_iso() handling the four timestamp formats in the export", V.contains("etl/load_events.py", "def to_utc_iso"),
          [read("data/events.csv"), read("etl/load_events.py"), write("etl/load_events.py", etl1)], "to_utc_iso handles ISO, epoch, US and offset forms.",
          explore=[ls("data")]),
        T("t2", "Add drop_duplicates() keyed on (ts, kind) after normalization", V.contains("etl/load_events.py", "def drop_duplicates"),
          [write("etl/load_events.py", etl2)], "Duplicates dropped after normalization.",
          bad=[write("etl/load_events.py", etl1 + "\n\ndef dedupe(rows):\n    return rows\n")]),
        T("t3", "Write data/events_clean.csv", V.exists("data/events_clean.csv"),
          [write("data/events_clean.csv", "id,ts,kind\n1,2026-11-01T10:00:00Z,login\n3,2026-11-01T10:05:00Z,purchase\n5,2026-11-01T09:07:00Z,logout\n")],
          "3 clean events.", explore=[read("etl/load_events.py")]),
        T("t4", "Unit-test to_utc_iso on every format", V.contains("tests/test_load_events.py", "test_to_utc_iso"),
          [write("tests/test_load_events.py", "from etl.load_events import to_utc_iso\n\n\ndef test_to_utc_iso():\n    assert to_utc_iso('1730455200') == '2024-11-01T10:00:00Z'\n    assert to_utc_iso('11/01/2026 10:05') == '2026-11-01T10:05:00Z'\n    assert to_utc_iso('2026-11-01 10:07:00+01:00'.replace(':00+01:00', ':00+0100')) == '2026-11-01T09:07:00Z'\n")],
          "Test covers epoch, US and offset forms."),
        T("t5", "Document the accepted formats in etl/README.md", V.contains("etl/README.md", "epoch seconds"),
          [write("etl/README.md", "# Event ETL\n\nAccepted `ts` forms: ISO-8601 UTC, epoch seconds, `MM/DD/YYYY HH:MM` (UTC), and `YYYY-MM-DD HH:MM:SS+HHMM`. Everything is stored as UTC ISO-8601.\n")],
          "README written."),
    ]
    return knee_case("knee-events-timestamps", "Normalize event timestamps to UTC ISO-8601, dedupe, test, document",
                     "Normalize every event timestamp in the ETL to UTC ISO-8601, drop duplicates, and document the accepted formats.",
                     files, {"etl": ("etl.sh", check)}, "etl", tasks, headroom=1.15, heavy=1.3, retry_task="t2", explore_tasks=("t1", "t3"),
                     doomed=unreachable("warehouse_backfill", "snowflake: authentication failed: SNOWFLAKE_PASSWORD is not set",
                             "Backfill the 2025 events in the warehouse with the new normalization",
                             [read("etl/load_events.py"), run_check("warehouse_backfill"), ls("etl"), run_check("warehouse_backfill")],
                             [read("data/events_clean.csv"), run_check("warehouse_backfill")],
                             "No warehouse credentials here; the backfill must run from the ETL host.",
                             explore=[ls("data")]), doomed_at=3)


def oncall_runbook():
    files = {"docs/oncall/README.md": "# On-call\n\nTBD\n", "ops/alerts.yaml": "- alert: CheckoutErrorRate\n  expr: rate(checkout_5xx[5m]) > 0.02\n- alert: QueueBacklog\n  expr: jobs_pending > 5000\n- alert: DiskFull\n  expr: disk_free_ratio < 0.1\n"}
    check = '''#!/bin/sh
d=docs/oncall/README.md
for s in "## Escalation" "## CheckoutErrorRate" "## QueueBacklog" "## DiskFull" "## Handover"; do
  grep -q "$s" $d || { echo "missing $s"; exit 1; }
done
'''
    parts = ["# On-call\n\n## Escalation\n\nPage the secondary after 15 minutes without an ack; the EM after 30.\n",
             "\n## CheckoutErrorRate\n\nCheck the payments dashboard first; roll back the last deploy if 5xx started with it.\n",
             "\n## QueueBacklog\n\nScale workers to 12; if the backlog still grows, pause the nightly exports.\n",
             "\n## DiskFull\n\nRotate logs under /var/log/app; never delete the WAL.\n",
             "\n## Handover\n\nWrite open incidents and silenced alerts in #oncall-handover at 09:00.\n"]
    docs = ["".join(parts[:i + 1]) for i in range(5)]
    tasks = [
        T("t1", "Write the escalation policy", V.contains("docs/oncall/README.md", "## Escalation"),
          [read("docs/oncall/README.md"), write("docs/oncall/README.md", docs[0])], "Escalation written.", explore=[ls("ops"), ls("docs")]),
        T("t2", "Runbook entry for CheckoutErrorRate", V.contains("docs/oncall/README.md", "## CheckoutErrorRate"),
          [read("ops/alerts.yaml"), write("docs/oncall/README.md", docs[1])], "CheckoutErrorRate entry written."),
        T("t3", "Runbook entry for QueueBacklog", V.contains("docs/oncall/README.md", "## QueueBacklog"),
          [write("docs/oncall/README.md", docs[2])], "QueueBacklog entry written.",
          bad=[write("docs/oncall/README.md", docs[1] + "\n## Queue backlog\n\nScale workers.\n")]),
        T("t4", "Runbook entry for DiskFull", V.contains("docs/oncall/README.md", "## DiskFull"),
          [write("docs/oncall/README.md", docs[3])], "DiskFull entry written.", explore=[read("ops/alerts.yaml")]),
        T("t5", "Ask #sre to review the runbook", V.outbox("oncall-runbook-review"),
          [post("#sre", "Draft on-call runbook in docs/oncall/README.md: escalation + one entry per alert. Reviews welcome.", "oncall-runbook-review")], "Asked #sre."),
        T("t6", "Write the handover routine", V.contains("docs/oncall/README.md", "## Handover"),
          [write("docs/oncall/README.md", docs[4])], "Handover written."),
    ]
    return knee_case("knee-oncall-runbook", "On-call runbook: escalation, one entry per alert, review request, handover",
                     "Write the on-call runbook in docs/oncall/README.md: escalation, one entry per alert in ops/alerts.yaml, and the handover routine.",
                     files, {"runbook": ("runbook.sh", check)}, "runbook", tasks, headroom=1.3, heavy=1.0, executor="claude-sonnet-5", max_tokens=4096,
                     retry_task="t3", explore_tasks=("t1", "t4"))


def invoices_currency():
    files = {
        "db/schema_version": "211\n",
        "migrations/0212_invoices_currency.json": json.dumps({"steps": [
            {"path": "db/migrations/0212_invoices_currency.sql", "content": "ALTER TABLE invoices ADD COLUMN currency char(3);\n"}]}, indent=2) + "\n",
        "migrations/0213_invoices_currency_not_null.json": json.dumps({"steps": [
            {"path": "db/migrations/0213_invoices_currency_not_null.sql", "content": "ALTER TABLE invoices ALTER COLUMN currency SET NOT NULL;\n"},
            {"path": "db/schema_version", "content": "213\n"}]}, indent=2) + "\n",
        "app/models/invoice.py": "class Invoice(Base):\n    __tablename__ = 'invoices'\n    id = Column(Integer, primary_key=True)\n    amount = Column(Numeric(12, 2))\n",
    }
    check = '''#!/bin/sh
grep -qx 213 db/schema_version || exit 1
grep -q "SET currency = 'EUR'" db/backfill/0212_invoices_currency.sql 2>/dev/null || exit 1
grep -q "currency = Column" app/models/invoice.py || exit 1
grep -q "currency" docs/billing.md 2>/dev/null
'''
    tasks = [
        T("t1", "Apply migration 0212_invoices_currency (nullable column)", V.migration("0212_invoices_currency"),
          [ls("migrations"), migrate("0212_invoices_currency")], "0212 applied.", explore=[read("db/schema_version")]),
        T("t2", "Backfill currency from the billing entity (EU entity -> EUR, US -> USD)", V.contains("db/backfill/0212_invoices_currency.sql", "SET currency = 'EUR'"),
          [write("db/backfill/0212_invoices_currency.sql", "UPDATE invoices SET currency = 'EUR' WHERE entity = 'eu' AND currency IS NULL;\nUPDATE invoices SET currency = 'USD' WHERE entity = 'us' AND currency IS NULL;\n")],
          "Backfill written.", bad=[write("db/backfill/0212_invoices_currency.sql", "UPDATE invoices SET currency = 'USD' WHERE currency IS NULL;\n")]),
        T("t3", "Apply migration 0213_invoices_currency_not_null", V.migration("0213_invoices_currency_not_null"),
          [read("migrations/0213_invoices_currency_not_null.json"), migrate("0213_invoices_currency_not_null")], "0213 applied."),
        T("t4", "Add currency to the Invoice model", V.contains("app/models/invoice.py", "currency = Column"),
          [read("app/models/invoice.py"), write("app/models/invoice.py", "class Invoice(Base):\n    __tablename__ = 'invoices'\n    id = Column(Integer, primary_key=True)\n    amount = Column(Numeric(12, 2))\n    currency = Column(String(3), nullable=False)\n")],
          "Model updated.", explore=[ls("app/models")]),
        T("t5", "Tell #billing the currency column is live", V.outbox("invoices-currency-live"),
          [post("#billing", "invoices.currency is live (0212 + backfill + 0213 NOT NULL). Exports now carry the currency.", "invoices-currency-live")], "Posted."),
        T("t6", "Document the column in docs/billing.md", V.contains("docs/billing.md", "currency"),
          [write("docs/billing.md", "# Billing data\n\n`invoices.currency` (ISO-4217, NOT NULL since 0213): EUR for the EU entity, USD for the US entity.\n")], "Documented."),
    ]
    return knee_case("knee-invoices-currency", "invoices.currency: add column, backfill, NOT NULL, model, announce, document",
                     "Give every invoice a currency: add invoices.currency, backfill it, make it NOT NULL, update the model, and document it.",
                     files, {"currency": ("currency.sh", check)}, "currency", tasks, headroom=1.2, heavy=1.4, retry_task="t2", explore_tasks=("t1", "t4"),
                     doomed=unreachable("ledger_reconcile", "ledger export: invoice totals differ by 1204.50 EUR on 3 invoices (credit notes missing from the export)",
                             "Reconcile invoice totals by currency against the ledger export",
                             [run_check("ledger_reconcile"), read("db/backfill/0212_invoices_currency.sql"), ls("db"), run_check("ledger_reconcile")],
                             [read("app/models/invoice.py"), run_check("ledger_reconcile")],
                             "The totals differ because the ledger export lacks credit notes; that needs finance, not a code change.",
                             explore=[ls("migrations")]), doomed_at=4)


def image_cdn():
    files = {"config/cdn.toml": "[images]\nmax_width = 4096\nformat = \"png\"\ncache_control = \"no-cache\"\n", "web/templates/gallery.html": "<div class=\"gallery\">{% for i in images %}<img src=\"{{ i.url }}\">{% endfor %}</div>\n"}
    check = '''#!/bin/sh
lcp=4200
grep -q "max_width = 1600" config/cdn.toml && lcp=$((lcp - 1200))
grep -q 'format = "webp"' config/cdn.toml && lcp=$((lcp - 900))
grep -q "max-age=31536000" config/cdn.toml && lcp=$((lcp - 500))
grep -q 'loading="lazy"' web/templates/gallery.html && lcp=$((lcp - 400))
echo "gallery LCP_ms=$lcp (target < 1300)"
[ "$lcp" -lt 1300 ]
'''
    c1 = "[images]\nmax_width = 1600\nformat = \"png\"\ncache_control = \"no-cache\"\n"
    c2 = c1.replace('"png"', '"webp"')
    c3 = c2.replace('"no-cache"', '"public, max-age=31536000, immutable"')
    tasks = [
        T("t1", "Resize gallery images to at most 1600px wide", V.contains("config/cdn.toml", "max_width = 1600"),
          [read("config/cdn.toml"), write("config/cdn.toml", c1)], "max_width 1600.", explore=[ls("config"), ls("web/templates")]),
        T("t2", "Serve WebP", V.contains("config/cdn.toml", 'format = "webp"'),
          [write("config/cdn.toml", c2)], "WebP on.", bad=[write("config/cdn.toml", c1.replace('"png"', '"avif"'))]),
        T("t3", "Cache images for a year (content-hashed URLs)", V.contains("config/cdn.toml", "max-age=31536000"),
          [read("config/cdn.toml"), write("config/cdn.toml", c3)], "Immutable caching on."),
        T("t4", "Lazy-load gallery images below the fold", V.contains("web/templates/gallery.html", 'loading="lazy"'),
          [read("web/templates/gallery.html"), write("web/templates/gallery.html", "<div class=\"gallery\">{% for i in images %}<img src=\"{{ i.url }}\"{% if not loop.first %} loading=\"lazy\"{% endif %}>{% endfor %}</div>\n")],
          "All but the first image lazy-load.", explore=[read("config/cdn.toml")]),
        T("t5", "Post the before/after LCP to #web", V.outbox("gallery-lcp"),
          [post("#web", "Gallery LCP 4.2s -> 1.2s: 1600px, WebP, immutable caching, lazy images.", "gallery-lcp")], "Posted."),
    ]
    # LCP needs all four changes; were the post last, the goal would be met before it
    # and it would be left in the queue: the post goes before t4.
    tasks = tasks[:3] + [tasks[4], tasks[3]]
    return knee_case("knee-gallery-lcp", "Gallery LCP under 1.3s: resize, WebP, caching, lazy loading",
                     "Bring the gallery page's largest contentful paint under 1.3s.",
                     files, {"lcp": ("lcp.sh", check)}, "lcp", tasks, headroom=2.0, heavy=1.2, retry_task="t2", explore_tasks=("t1", "t4"),
                     doomed=unreachable("lighthouse_staging", "lighthouse: net::ERR_NAME_NOT_RESOLVED staging.gallery.internal",
                             "Measure LCP with Lighthouse on the staging gallery",
                             [run_check("lighthouse_staging"), read("config/cdn.toml"), run_check("lcp"), run_check("lighthouse_staging")],
                             [ls("web/templates"), run_check("lighthouse_staging")],
                             "staging.gallery.internal does not resolve from here; Lighthouse has to run in CI."))


def flags_cleanup():
    files = {"config/flags.toml": "new_checkout = true\nlegacy_search = false\nbeta_banner = false\n", "src/checkout.py": "from flags import enabled\n\n\ndef checkout(cart):\n    if enabled('new_checkout'):\n        return new_flow(cart)\n    return old_flow(cart)\n",
             "src/search.py": "from flags import enabled\n\n\ndef search(q):\n    if enabled('legacy_search'):\n        return legacy(q)\n    return modern(q)\n"}
    check = '''#!/bin/sh
! grep -q "enabled('new_checkout')" src/checkout.py || exit 1
! grep -q "enabled('legacy_search')" src/search.py || exit 1
! grep -q "new_checkout\\|legacy_search" config/flags.toml || exit 1
grep -q "Removed flags" CHANGELOG.md 2>/dev/null
'''
    tasks = [
        T("t1", "Inline new_checkout (always on) in src/checkout.py", V.contains("src/checkout.py", "return new_flow(cart)\n# new_checkout inlined"),
          [read("src/checkout.py"), write("src/checkout.py", "def checkout(cart):\n    return new_flow(cart)\n# new_checkout inlined 2026-11\n")], "new_checkout inlined.",
          explore=[ls("src"), read("config/flags.toml")]),
        T("t2", "Remove the legacy_search branch in src/search.py", V.contains("src/search.py", "# legacy_search removed"),
          [read("src/search.py"), write("src/search.py", "def search(q):\n    return modern(q)\n# legacy_search removed 2026-11\n")], "legacy_search removed.",
          bad=[write("src/search.py", "from flags import enabled\n\n\ndef search(q):\n    return modern(q)\n")]),
        T("t3", "Delete both flags from config/flags.toml", V.contains("config/flags.toml", "beta_banner = false"),
          [read("config/flags.toml"), write("config/flags.toml", "# two dead flags removed 2026-11 (see CHANGELOG.md)\nbeta_banner = false\n")], "Flags deleted."),
        T("t4", "Note the removal in CHANGELOG.md", V.contains("CHANGELOG.md", "Removed flags"),
          [write("CHANGELOG.md", "## 2026-11\n\nRemoved flags: new_checkout (always on), legacy_search (always off).\n")], "Changelog updated.", explore=[ls(".")]),
    ]
    # t3's verify text is present before the run, so admission would reject it: verify on the comment instead.
    tasks[2].verify = V.contains("config/flags.toml", "dead flags removed")
    return knee_case("knee-flag-cleanup", "Remove two dead feature flags: inline, delete, changelog",
                     "Remove the new_checkout and legacy_search feature flags: inline their winning branches, delete them from config, note it in the changelog.",
                     files, {"flags": ("flags.sh", check)}, "flags", tasks, headroom=1.8, heavy=0.9, executor="claude-sonnet-5", max_tokens=4096,
                     retry_task="t2", explore_tasks=("t1", "t4"))


def cases():
    return [search_latency(), orders_fk(), customers_cleaning(), api_docs(), checkout_latency(), events_dates(), oncall_runbook(),
            invoices_currency(), image_cdn(), flags_cleanup()]


def main():
    only = set(sys.argv[1:])
    cs = [c for c in cases() if not only or c.id in only]
    if only and len(cs) != len(only):
        sys.exit(f"no such case(s): {', '.join(sorted(only - {c.id for c in cs}))}")
    subprocess.run(["cargo", "build", "-q", "-p", "bench"], cwd=ROOT, check=True)
    bench = os.path.join(ROOT, "target", "debug", "bench")
    dirs = [c.write() for c in cs]
    r = subprocess.run([bench, "script", *dirs], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(r.stderr)
    for c in cs:
        print(f"{c.id:28} cap ${c.cap:.2f}  max_tokens {c.max_tokens}  {c.executor}")
    print(f"wrote {len(dirs)} case(s)")


if __name__ == "__main__":
    main()
