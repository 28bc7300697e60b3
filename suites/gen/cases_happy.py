"""Happy cases: the harness doing its job on realistic goals."""

import json

from lib import (Case, V, call, judge_call, ls, migrate, plan_call, post, read, run_check, steps, task, u, write)

P95_GOAL = "Reduce p95 latency on /api/search to under 200ms."


def search_p95_index():
    c = Case("happy-search-p95-index", "happy", "Index migration plus a result cache bring /api/search p95 under 200ms",
             ["GOAL_MET", "migration", "harness-measures-goal"], P95_GOAL)
    c.ws("src/search.py", '''"""/api/search handler."""

SEARCH_SQL = """
SELECT id, title, created_at
FROM search_events
WHERE query = %(q)s
ORDER BY created_at DESC
LIMIT 50
"""


def search(db, cache, q):
    return db.execute(SEARCH_SQL, {"q": q}).fetchall()
''')
    c.ws("config/search.toml", "[cache]\nbackend = \"redis\"\nttl_s = 0          # caching disabled since the 2025 incident\nmax_entries = 50000\n")
    c.ws("migrations/0042_search_index.json", json.dumps({"steps": [
        {"path": "db/migrations/0042_search_index.sql", "content": "-- 0042: recency index for /api/search\nCREATE INDEX CONCURRENTLY idx_search_ts ON search_events (query, created_at DESC);\n"},
        {"path": "db/migrations/0042_search_index.down.sql", "content": "DROP INDEX CONCURRENTLY IF EXISTS idx_search_ts;\n"},
        {"path": "db/schema_version", "content": "42\n"}]}, indent=2) + "\n")
    c.ws("db/schema_version", "41\n")
    c.check_script("p95", "p95.sh", '''#!/bin/sh
# Stand-in load test for /api/search: p95 in ms from what the workspace holds.
p95=410
if grep -q "idx_search_ts" db/migrations/0042_search_index.sql 2>/dev/null && grep -qx "42" db/schema_version; then
  p95=$((p95 - 150))
fi
ttl=$(sed -n 's/^ttl_s *= *\\([0-9]*\\).*/\\1/p' config/search.toml)
if [ -n "$ttl" ] && [ "$ttl" -ge 15 ]; then
  p95=$((p95 - 80))
fi
echo "p95_ms=$p95 (target < 200)"
[ "$p95" -lt 200 ]
''')
    c.predicate = ("check", "p95")
    tasks = [
        task("t1", "Apply migration 0042_search_index: composite index idx_search_ts on search_events(query, created_at DESC)", V.migration("0042_search_index")),
        task("t2", "Re-enable the search result cache with a 30s TTL in config/search.toml", V.contains("config/search.toml", "ttl_s = 30")),
        task("t3", "Re-measure p95 on /api/search with the load-test check", V.check("p95")),
    ]
    c.run([
        plan_call(tasks),
        *steps("t1", [ls("migrations"), migrate("0042_search_index")], "Migration 0042 applied: idx_search_ts now covers (query, created_at DESC)."),
        *steps("t2", [read("config/search.toml"), write("config/search.toml", "[cache]\nbackend = \"redis\"\nttl_s = 30         # re-enabled for /api/search p95 (was 0 since the 2025 incident)\nmax_entries = 50000\n")],
               "Cache TTL set to 30s; max_entries unchanged."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2"], "queue_left": ["t3"],
                "parked": [], "files_contain": {"db/schema_version": "42", "config/search.toml": "ttl_s = 30"},
                "report": {"class": "SUCCESS", "exit_code": 0, "alert": "none"}}
    c.comment = "The harness measures the goal at the top of every lap: once p95 < 200ms it stops, so the agent's own\nre-measure task (t3) is never run and is reported as left in the queue."
    return c


def orders_fk_migration():
    c = Case("happy-orders-fk-migration", "happy", "Schema migration 0107 adds the orders -> customers foreign key after an orphan backfill",
             ["GOAL_MET", "migration", "schema"],
             "Add a foreign key from orders.customer_id to customers.id as schema migration 0107, after backfilling orphaned orders, and update the ORM model.")
    c.ws("db/schema_version", "106\n")
    c.ws("db/migrations/0106_customers_email_idx.sql", "CREATE UNIQUE INDEX CONCURRENTLY customers_email_lower ON customers (lower(email));\n")
    c.ws("migrations/0107_orders_customer_fk.json", json.dumps({"steps": [
        {"path": "db/migrations/0107_orders_customer_fk.sql", "content": "-- 0107: orders.customer_id -> customers.id\nALTER TABLE orders\n  ADD CONSTRAINT orders_customer_id_fkey FOREIGN KEY (customer_id) REFERENCES customers (id) NOT VALID;\nALTER TABLE orders VALIDATE CONSTRAINT orders_customer_id_fkey;\n"},
        {"path": "db/migrations/0107_orders_customer_fk.down.sql", "content": "ALTER TABLE orders DROP CONSTRAINT IF EXISTS orders_customer_id_fkey;\n"},
        {"path": "db/schema_version", "content": "107\n"}]}, indent=2) + "\n")
    c.ws("app/models/order.py", '''from sqlalchemy import Column, Integer, Numeric, String
from app.models.base import Base


class Order(Base):
    __tablename__ = "orders"
    id = Column(Integer, primary_key=True)
    customer_id = Column(Integer, nullable=True)
    total = Column(Numeric(12, 2), nullable=False)
    status = Column(String(16), nullable=False, default="open")
''')
    c.check_script("schema", "schema.sh", '''#!/bin/sh
# The schema is at 0107, the FK exists, orphans were handled first, and the ORM knows the FK.
fail=0
grep -qx "107" db/schema_version || { echo "schema_version is $(cat db/schema_version), want 107"; fail=1; }
grep -q "FOREIGN KEY (customer_id) REFERENCES customers" db/migrations/0107_orders_customer_fk.sql 2>/dev/null || { echo "no FK migration"; fail=1; }
grep -q "customer_id NOT IN (SELECT id FROM customers)" db/backfill/0107_orphan_orders.sql 2>/dev/null || { echo "no orphan backfill"; fail=1; }
grep -q 'ForeignKey("customers.id")' app/models/order.py || { echo "ORM model has no ForeignKey"; fail=1; }
exit $fail
''')
    c.predicate = ("check", "schema")
    backfill = "-- Orders whose customer was hard-deleted before 2024 soft-deletes: detach them so 0107 can validate.\nUPDATE orders SET customer_id = NULL\nWHERE customer_id IS NOT NULL AND customer_id NOT IN (SELECT id FROM customers);\n"
    model = '''from sqlalchemy import Column, ForeignKey, Integer, Numeric, String
from sqlalchemy.orm import relationship
from app.models.base import Base


class Order(Base):
    __tablename__ = "orders"
    id = Column(Integer, primary_key=True)
    customer_id = Column(Integer, ForeignKey("customers.id"), nullable=True)
    total = Column(Numeric(12, 2), nullable=False)
    status = Column(String(16), nullable=False, default="open")

    customer = relationship("Customer", back_populates="orders")
'''
    tasks = [
        task("t1", "Write the orphan backfill db/backfill/0107_orphan_orders.sql (NULL out customer_id where the customer no longer exists)", V.contains("db/backfill/0107_orphan_orders.sql", "NOT IN (SELECT id FROM customers)")),
        task("t2", "Apply migration 0107_orders_customer_fk", V.migration("0107_orders_customer_fk")),
        task("t3", "Declare the FK on the Order model (ForeignKey('customers.id') plus relationship)", V.contains("app/models/order.py", 'ForeignKey("customers.id")')),
    ]
    c.run([
        plan_call(tasks),
        *steps("t1", [write("db/backfill/0107_orphan_orders.sql", backfill)], "Backfill written; it runs before 0107 in the deploy."),
        *steps("t2", [read("migrations/0107_orders_customer_fk.json"), migrate("0107_orders_customer_fk")], "0107 applied (NOT VALID then VALIDATE, so no long lock)."),
        *steps("t3", [read("app/models/order.py"), write("app/models/order.py", model)], "Order.customer_id now declares ForeignKey('customers.id')."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2", "t3"], "verified_count": 3, "parked": [],
                "files_contain": {"db/schema_version": "107", "db/migrations/0107_orders_customer_fk.down.sql": "DROP CONSTRAINT"}}
    return c


CUSTOMERS = """customer_id,email,name,plan,updated_at
1001,alice.nguyen@example.com,Alice Nguyen,pro,2026-03-02T10:15:00Z
1002,bob.ortiz@example.com,Bob Ortiz,free,2026-01-11T08:00:00Z
1003,Alice.Nguyen@Example.com,Alice Nguyen,team,2026-05-19T16:40:00Z
1004,carla.meier@example.com,Carla Meier,pro,2025-12-30T09:05:00Z
1005,dev.patel@example.com,Dev Patel,free,2026-02-14T12:00:00Z
1006,BOB.ORTIZ@EXAMPLE.COM,Robert Ortiz,pro,2025-11-02T07:45:00Z
1007,emi.tanaka@example.com,Emi Tanaka,team,2026-04-01T18:20:00Z
1008,carla.meier@example.com,Carla Meier,team,2026-06-07T11:11:00Z
1009,farid.haddad@example.com,Farid Haddad,free,2026-03-28T13:30:00Z
1010,gita.rao@example.com,Gita Rao,pro,2026-05-05T06:55:00Z
1011,dev.patel@example.com ,Dev Patel,free,2026-01-01T00:00:00Z
1012,hana.kim@example.com,Hana Kim,pro,2026-06-30T22:10:00Z
"""

DEDUPED = """customer_id,email,name,plan,updated_at
1003,Alice.Nguyen@Example.com,Alice Nguyen,team,2026-05-19T16:40:00Z
1002,bob.ortiz@example.com,Bob Ortiz,free,2026-01-11T08:00:00Z
1008,carla.meier@example.com,Carla Meier,team,2026-06-07T11:11:00Z
1005,dev.patel@example.com,Dev Patel,free,2026-02-14T12:00:00Z
1007,emi.tanaka@example.com,Emi Tanaka,team,2026-04-01T18:20:00Z
1009,farid.haddad@example.com,Farid Haddad,free,2026-03-28T13:30:00Z
1010,gita.rao@example.com,Gita Rao,pro,2026-05-05T06:55:00Z
1012,hana.kim@example.com,Hana Kim,pro,2026-06-30T22:10:00Z
"""


def dedupe_customers():
    c = Case("happy-dedupe-customers-csv", "happy", "Deduplicate customers.csv by case-insensitive email, keeping the newest row",
             ["GOAL_MET", "data-cleaning"],
             "Deduplicate data/customers.csv by email (case-insensitive, trimmed), keeping the most recently updated row for each customer.")
    c.ws("data/customers.csv", CUSTOMERS)
    c.ws("data/README.md", "customers.csv is exported nightly from the CRM; emails are not normalized at entry.\n")
    c.check_script("dedupe", "dedupe.py", '''#!/usr/bin/env python3
"""customers.csv has one row per normalized email, and each kept row is the newest of its group."""
import csv, sys

ORIGINAL = {  # normalized email -> newest updated_at in the original export
    "alice.nguyen@example.com": "2026-05-19T16:40:00Z", "bob.ortiz@example.com": "2026-01-11T08:00:00Z",
    "carla.meier@example.com": "2026-06-07T11:11:00Z", "dev.patel@example.com": "2026-02-14T12:00:00Z",
    "emi.tanaka@example.com": "2026-04-01T18:20:00Z", "farid.haddad@example.com": "2026-03-28T13:30:00Z",
    "gita.rao@example.com": "2026-05-05T06:55:00Z", "hana.kim@example.com": "2026-06-30T22:10:00Z",
}
rows = list(csv.DictReader(open("data/customers.csv", newline="")))
seen = {}
for r in rows:
    e = r["email"].strip().lower()
    if e in seen:
        sys.exit(f"duplicate email {e}")
    seen[e] = r["updated_at"]
if set(seen) != set(ORIGINAL):
    sys.exit(f"customers lost or invented: {sorted(set(ORIGINAL) ^ set(seen))}")
for e, ts in ORIGINAL.items():
    if seen[e] != ts:
        sys.exit(f"{e}: kept the row from {seen[e]}, newest is {ts}")
print(f"{len(rows)} unique customers")
''')
    c.predicate = ("check", "dedupe")
    tasks = [
        task("t1", "Keep a reusable dedupe script at scripts/dedupe_customers.py (normalize email: strip + lowercase; keep max updated_at)", V.contains("scripts/dedupe_customers.py", "def dedupe")),
        task("t2", "Rewrite data/customers.csv with one row per normalized email", V.check("dedupe")),
    ]
    script = '''"""Dedupe the CRM export by normalized email, keeping the newest row."""
import csv
import sys


def dedupe(rows):
    best = {}
    for r in rows:
        key = r["email"].strip().lower()
        if key not in best or r["updated_at"] > best[key]["updated_at"]:
            best[key] = r
    return sorted(best.values(), key=lambda r: r["email"].strip().lower())


if __name__ == "__main__":
    rows = list(csv.DictReader(open(sys.argv[1], newline="")))
    out = csv.DictWriter(sys.stdout, fieldnames=rows[0].keys())
    out.writeheader()
    out.writerows(dedupe(rows))
'''
    c.run([
        plan_call(tasks),
        *steps("t1", [write("scripts/dedupe_customers.py", script)], "Added scripts/dedupe_customers.py."),
        *steps("t2", [read("data/customers.csv"), write("data/customers.csv", DEDUPED), run_check("dedupe")],
               "12 rows -> 8 customers; kept the newest row for alice, bob, carla and dev."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2"], "parked": [], "queue_left": [],
                "files_contain": {"data/customers.csv": "1008,carla.meier@example.com"}}
    return c


def normalize_dates():
    c = Case("happy-normalize-event-dates", "happy", "Normalize mixed date formats in events.csv to ISO 8601",
             ["GOAL_MET", "data-cleaning"],
             "Normalize every date in data/events.csv to ISO 8601 (YYYY-MM-DD) without changing any other column.")
    c.ws("data/events.csv", """event_id,date,venue,attendees
E-201,03/14/2026,Berlin Hall A,120
E-202,2026-03-15,Berlin Hall B,85
E-203,16 Mar 2026,Lisbon Pavilion,240
E-204,"Mar 17, 2026",Lisbon Pavilion,198
E-205,2026/03/18,Online,1032
E-206,19.03.2026,Vienna Kursalon,64
""")
    c.check_script("iso_dates", "iso_dates.py", '''#!/usr/bin/env python3
import csv, re, sys
WANT = {"E-201": "2026-03-14", "E-202": "2026-03-15", "E-203": "2026-03-16", "E-204": "2026-03-17",
        "E-205": "2026-03-18", "E-206": "2026-03-19"}
ATT = {"E-201": "120", "E-202": "85", "E-203": "240", "E-204": "198", "E-205": "1032", "E-206": "64"}
rows = list(csv.DictReader(open("data/events.csv", newline="")))
got = {r["event_id"]: r["date"] for r in rows}
bad = [f"{k}: {got.get(k)!r} != {v}" for k, v in WANT.items() if got.get(k) != v]
bad += [f"{r['event_id']}: attendees changed" for r in rows if ATT.get(r["event_id"]) != r["attendees"]]
if any(not re.fullmatch(r"\\d{4}-\\d{2}-\\d{2}", d) for d in got.values()):
    bad.append("a date is not YYYY-MM-DD")
print("\\n".join(bad) or "all dates ISO 8601")
sys.exit(1 if bad else 0)
''')
    c.predicate = ("check", "iso_dates")
    tasks = [task("t1", "Rewrite the date column of data/events.csv as YYYY-MM-DD (inputs: MM/DD/YYYY, D Mon YYYY, Mon D, YYYY, YYYY/MM/DD, DD.MM.YYYY)", V.check("iso_dates"))]
    fixed = """event_id,date,venue,attendees
E-201,2026-03-14,Berlin Hall A,120
E-202,2026-03-15,Berlin Hall B,85
E-203,2026-03-16,Lisbon Pavilion,240
E-204,2026-03-17,Lisbon Pavilion,198
E-205,2026-03-18,Online,1032
E-206,2026-03-19,Vienna Kursalon,64
"""
    c.run([
        plan_call(tasks),
        *steps("t1", [ls("data"), read("data/events.csv"), write("data/events.csv", fixed), run_check("iso_dates")],
               "All six dates are ISO 8601 now; 19.03.2026 was read as day-first (European venue)."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"], "verified_count": 1,
                "files_contain": {"data/events.csv": "E-204,2026-03-17"}}
    return c


ROUTES = '''"""Routes of the invoices API (v2)."""

ROUTES = [
    ("GET", "/v2/invoices"),
    ("POST", "/v2/invoices"),
    ("GET", "/v2/invoices/{id}"),
    ("GET", "/v2/invoices/{id}/lines"),
    ("POST", "/v2/invoices/{id}/void"),
]
'''

API_MD = """# Invoices API v2

All endpoints require a bearer session from the dashboard login; see auth.md.

### GET /v2/invoices
Lists invoices, newest first.

### POST /v2/invoices
Creates a draft invoice. Body: `customer_id`, `currency`, `lines[]`.

### GET /v2/invoices/{id}
Returns one invoice with totals.

### POST /v2/invoices/{id}/void
Voids an open invoice. Paid invoices cannot be voided.
"""


def docs_pagination():
    c = Case("happy-docs-pagination-section", "happy", "Fill the missing API docs: the invoice lines route and the pagination section",
             ["GOAL_MET", "docs"],
             "Document the invoices API completely in docs/api.md: every route in src/routes.py gets its own section, and list endpoints document their pagination parameters.")
    c.ws("src/routes.py", ROUTES)
    c.ws("docs/api.md", API_MD)
    c.ws("src/pagination.py", '''DEFAULT_LIMIT = 50
MAX_LIMIT = 200


def page(query, cursor=None, limit=DEFAULT_LIMIT):
    """Keyset pagination: `cursor` is the opaque next_cursor of the previous page."""
    limit = min(int(limit), MAX_LIMIT)
    ...
''')
    c.check_script("docs", "docs.py", '''#!/usr/bin/env python3
import re, sys
ns = {}
exec(open("src/routes.py").read(), ns)
doc = open("docs/api.md").read()
missing = [f"{m} {p}" for m, p in ns["ROUTES"] if f"### {m} {p}" not in doc]
if "## Pagination" not in doc:
    missing.append("## Pagination section")
elif not all(w in doc for w in ("cursor", "limit", "200", "next_cursor")):
    missing.append("pagination section must name cursor, limit (max 200) and next_cursor")
print("missing: " + ", ".join(missing) if missing else "docs complete")
sys.exit(1 if missing else 0)
''')
    c.predicate = ("check", "docs")
    tasks = [
        task("t1", "Add a '## Pagination' section to docs/api.md (cursor, limit default 50 max 200, next_cursor)", V.contains("docs/api.md", "## Pagination")),
        task("t2", "Document GET /v2/invoices/{id}/lines in docs/api.md", V.check("docs")),
    ]
    with_pag = API_MD + """
## Pagination
List endpoints (`GET /v2/invoices`, `GET /v2/invoices/{id}/lines`) use keyset pagination.
Query parameters: `limit` (default 50, max 200) and `cursor`, the opaque `next_cursor`
returned by the previous page. A response without `next_cursor` is the last page.
"""
    full = with_pag.replace("### POST /v2/invoices/{id}/void", "### GET /v2/invoices/{id}/lines\nLists the invoice's line items (paginated, see Pagination).\n\n### POST /v2/invoices/{id}/void")
    c.run([
        plan_call(tasks),
        *steps("t1", [read("src/pagination.py"), read("docs/api.md"), write("docs/api.md", with_pag)], "Pagination documented from src/pagination.py."),
        *steps("t2", [read("src/routes.py"), write("docs/api.md", full), run_check("docs")], "Every route in src/routes.py now has a section."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2"],
                "files_contain": {"docs/api.md": "### GET /v2/invoices/{id}/lines"}}
    return c


PRICING_BUGGY = '''"""Order pricing."""
BULK_THRESHOLD = 100
BULK_DISCOUNT = 0.10


def line_total(unit_price_cents, qty):
    total = unit_price_cents * qty
    if qty >= BULK_THRESHOLD:
        total = apply_bulk(total)
    return apply_bulk(total) if qty >= BULK_THRESHOLD else total


def apply_bulk(cents):
    return round(cents * (1 - BULK_DISCOUNT))
'''

PRICING_FIXED = '''"""Order pricing."""
BULK_THRESHOLD = 100
BULK_DISCOUNT = 0.10


def line_total(unit_price_cents, qty):
    total = unit_price_cents * qty
    if qty >= BULK_THRESHOLD:
        total = apply_bulk(total)  # the discount applies once
    return total


def apply_bulk(cents):
    return round(cents * (1 - BULK_DISCOUNT))
'''

PRICING_TEST = '''import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
from pricing import line_total  # noqa: E402


class LineTotal(unittest.TestCase):
    def test_small_order_has_no_discount(self):
        self.assertEqual(line_total(250, 4), 1000)

    def test_bulk_discount_applies_once(self):
        self.assertEqual(line_total(250, 100), 22500)

    def test_threshold_is_inclusive(self):
        self.assertEqual(line_total(100, 99), 9900)
        self.assertEqual(line_total(100, 100), 9000)


if __name__ == "__main__":
    unittest.main()
'''


def fix_pricing_test():
    c = Case("happy-fix-failing-pricing-test", "happy", "A failing unit test is fixed in the code, not in the test",
             ["GOAL_MET", "failing-test", "run_check"],
             "Make the pricing test suite pass: tests/test_pricing.py fails because bulk orders are discounted twice.")
    c.ws("src/pricing.py", PRICING_BUGGY)
    c.ws("tests/test_pricing.py", PRICING_TEST)
    c.check_script("tests", "tests.sh", '''#!/bin/sh
# The suite as the spec defines it: the workspace's tests, plus a pinned copy of
# the bulk-discount assertion kept outside the workspace.
python3 -B -m unittest discover -s tests -q 2>&1 || exit 1
python3 -B - <<'EOF'
import sys
sys.path.insert(0, "src")
from pricing import line_total
assert line_total(250, 100) == 22500, line_total(250, 100)
print("pinned bulk check ok")
EOF
''')
    c.predicate = ("check", "tests")
    tasks = [task("t1", "Fix line_total in src/pricing.py so the bulk discount is applied once", V.check("tests"))]
    c.run([
        plan_call(tasks),
        *steps("t1", [run_check("tests"), read("src/pricing.py"), write("src/pricing.py", PRICING_FIXED), run_check("tests")],
               "line_total applied apply_bulk twice for qty >= 100; it now applies it once. 3 tests pass."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"],
                "files_contain": {"src/pricing.py": "the discount applies once", "tests/test_pricing.py": "22500"}}
    return c


def remove_db_password():
    c = Case("happy-remove-hardcoded-db-password", "happy", "Security fix: a hard-coded database password moves to the environment",
             ["GOAL_MET", "security-fix", "post_message"],
             "Remove the hard-coded database password from config/settings.py: read it from the DB_PASSWORD environment variable, document the variable in .env.example, and ask #security to rotate the leaked password.")
    c.ws("config/settings.py", '''import os

DEBUG = False
DATABASE = {
    "host": os.environ.get("DB_HOST", "db.internal"),
    "port": 5432,
    "name": "billing",
    "user": "billing_app",
    "password": "Winter2019-billing!",
}
''')
    c.ws(".env.example", "DB_HOST=localhost\n")
    c.check_script("no_secrets", "no_secrets.sh", '''#!/bin/sh
fail=0
if grep -rn "Winter2019" --include='*.py' --include='*.example' --include='*.md' . ; then echo "literal password still present"; fail=1; fi
grep -q 'os.environ\\["DB_PASSWORD"\\]' config/settings.py || { echo "settings.py does not read DB_PASSWORD"; fail=1; }
grep -q '^DB_PASSWORD=' .env.example || { echo ".env.example does not document DB_PASSWORD"; fail=1; }
exit $fail
''')
    c.predicate = ("check", "no_secrets")
    tasks = [
        task("t1", "Read the DB password from os.environ['DB_PASSWORD'] in config/settings.py", V.contains("config/settings.py", 'os.environ["DB_PASSWORD"]')),
        task("t2", "Ask #security to rotate the billing_app password that was committed in config/settings.py", V.outbox("rotate-billing-db-password")),
        task("t3", "Document DB_PASSWORD in .env.example", V.contains(".env.example", "DB_PASSWORD=")),
    ]
    c.run([
        plan_call(tasks),
        *steps("t1", [read("config/settings.py"), write("config/settings.py", '''import os

DEBUG = False
DATABASE = {
    "host": os.environ.get("DB_HOST", "db.internal"),
    "port": 5432,
    "name": "billing",
    "user": "billing_app",
    "password": os.environ["DB_PASSWORD"],  # required; no default on purpose
}
''')], "settings.py reads DB_PASSWORD and fails fast when it is unset."),
        *steps("t2", [post("#security", "The billing_app Postgres password was committed in config/settings.py (history still has it). Please rotate it; the app now reads DB_PASSWORD from the environment.", "rotate-billing-db-password")],
               "Rotation request posted to #security."),
        *steps("t3", [write(".env.example", "DB_HOST=localhost\nDB_PASSWORD=\n")], ".env.example lists DB_PASSWORD (empty)."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2", "t3"], "outbox_total": 1,
                "outbox_key_count": {"rotate-billing-db-password": 1}, "outbox_contains": ["rotate"],
                "files_contain": {"config/settings.py": 'os.environ["DB_PASSWORD"]'}}
    return c


def bump_requests():
    c = Case("happy-bump-requests-cve", "happy", "Dependency bump: requests >= 2.32.3 in requirements and lock, changelog notes the CVE",
             ["GOAL_MET", "dependency-bump"],
             "Upgrade requests to 2.32.3 or later in requirements.txt and requirements.lock to close CVE-2024-35195, and note it in CHANGELOG.md.")
    c.ws("requirements.txt", "flask==3.0.3\nrequests==2.31.0\nsqlalchemy==2.0.30\ngunicorn==22.0.0\n")
    c.ws("requirements.lock", "# pip-compile --generate-hashes output, trimmed\ncertifi==2024.2.2\ncharset-normalizer==3.3.2\nflask==3.0.3\nidna==3.7\nrequests==2.31.0\nsqlalchemy==2.0.30\nurllib3==2.2.1\ngunicorn==22.0.0\n")
    c.ws("CHANGELOG.md", "# Changelog\n\n## Unreleased\n\n## 1.8.0\n- Invoice export to CSV.\n")
    c.check_script("deps", "deps.py", '''#!/usr/bin/env python3
import re, sys
def ver(path):
    m = re.search(r"^requests==([0-9.]+)$", open(path).read(), re.M)
    return tuple(int(x) for x in m.group(1).split(".")) if m else None
bad = [p for p in ("requirements.txt", "requirements.lock") if (ver(p) or (0,)) < (2, 32, 3)]
if "CVE-2024-35195" not in open("CHANGELOG.md").read():
    bad.append("CHANGELOG.md does not mention CVE-2024-35195")
print("not yet: " + ", ".join(bad) if bad else "requests pinned >= 2.32.3 everywhere")
sys.exit(1 if bad else 0)
''')
    c.predicate = ("check", "deps")
    tasks = [
        task("t1", "Pin requests==2.32.3 in requirements.txt", V.contains("requirements.txt", "requests==2.32.3")),
        task("t2", "Pin requests==2.32.3 in requirements.lock", V.contains("requirements.lock", "requests==2.32.3")),
        task("t3", "Add the security fix to CHANGELOG.md under Unreleased", V.contains("CHANGELOG.md", "CVE-2024-35195")),
    ]
    c.run([
        plan_call(tasks),
        *steps("t1", [write("requirements.txt", "flask==3.0.3\nrequests==2.32.3\nsqlalchemy==2.0.30\ngunicorn==22.0.0\n")], "Bumped."),
        *steps("t2", [read("requirements.lock"), write("requirements.lock", "# pip-compile --generate-hashes output, trimmed\ncertifi==2024.2.2\ncharset-normalizer==3.3.2\nflask==3.0.3\nidna==3.7\nrequests==2.32.3\nsqlalchemy==2.0.30\nurllib3==2.2.1\ngunicorn==22.0.0\n")],
               "Lock bumped; urllib3 2.2.1 already satisfies requests 2.32.3."),
        *steps("t3", [write("CHANGELOG.md", "# Changelog\n\n## Unreleased\n- Security: requests 2.31.0 -> 2.32.3 (CVE-2024-35195: Session kept verify=False for later requests to the same host).\n\n## 1.8.0\n- Invoice export to CSV.\n")],
               "Changelog updated."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2", "t3"], "verified_count": 3,
                "files_contain": {"requirements.lock": "requests==2.32.3"}}
    return c


PAYMENTS_YAML = """# Outbound HTTP clients of the payments service.
upstreams:
  - name: card_gateway
    base_url: https://gateway.internal/v3
    connect_timeout_ms: 1500
    read_timeout_ms: 8000
  - name: ledger_service
    base_url: http://ledger.internal:8080
    read_timeout_ms: 60000
  - name: fraud_scoring
    base_url: http://fraud.internal:9000
    retries: 3
"""


def http_timeouts():
    c = Case("happy-http-client-timeouts", "happy", "Config change: every payments upstream gets bounded connect/read timeouts",
             ["GOAL_MET", "config-change"],
             "Stop the payments service from hanging on slow upstreams: every upstream in config/payments.yaml needs connect_timeout_ms <= 2000 and read_timeout_ms <= 10000.")
    c.ws("config/payments.yaml", PAYMENTS_YAML)
    c.ws("docs/incidents/2026-10-07-ledger-hang.md", "Checkout hung for 14 minutes: ledger_service accepted connections but never answered; the client had a 60s read timeout and no connect timeout.\n")
    c.check_script("timeouts", "timeouts.py", '''#!/usr/bin/env python3
import re, sys
blocks = re.split(r"\\n  - ", open("config/payments.yaml").read())[1:]
bad = []
names = []
for b in blocks:
    name = re.search(r"name: (\\S+)", b).group(1)
    names.append(name)
    ct = re.search(r"connect_timeout_ms: (\\d+)", b)
    rt = re.search(r"read_timeout_ms: (\\d+)", b)
    if not ct or int(ct.group(1)) > 2000:
        bad.append(f"{name}: connect_timeout_ms")
    if not rt or int(rt.group(1)) > 10000:
        bad.append(f"{name}: read_timeout_ms")
if sorted(names) != ["card_gateway", "fraud_scoring", "ledger_service"]:
    bad.append(f"upstreams changed: {names}")
print("\\n".join(bad) or "all upstreams bounded")
sys.exit(1 if bad else 0)
''')
    c.predicate = ("check", "timeouts")
    fixed = """# Outbound HTTP clients of the payments service.
upstreams:
  - name: card_gateway
    base_url: https://gateway.internal/v3
    connect_timeout_ms: 1500
    read_timeout_ms: 8000
  - name: ledger_service
    base_url: http://ledger.internal:8080
    connect_timeout_ms: 1000
    read_timeout_ms: 5000
  - name: fraud_scoring
    base_url: http://fraud.internal:9000
    connect_timeout_ms: 500
    read_timeout_ms: 2000
    retries: 3
"""
    tasks = [task("t1", "Set connect/read timeouts on ledger_service and fraud_scoring in config/payments.yaml", V.check("timeouts"))]
    c.run([
        plan_call(tasks),
        *steps("t1", [read("docs/incidents/2026-10-07-ledger-hang.md"), read("config/payments.yaml"), write("config/payments.yaml", fixed), run_check("timeouts")],
               "ledger_service 1s/5s, fraud_scoring 0.5s/2s (it retries 3x, so worst case stays under 10s)."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"],
                "files_contain": {"config/payments.yaml": "read_timeout_ms: 5000"}}
    return c


WORKER = '''import logging
import time

log = logging.getLogger("billing.worker")


def run(queue, handle):
    while True:
        log.info("polling queue %s", queue.name)
        msgs = queue.receive(max_messages=10, wait_s=20)
        if not msgs:
            log.info("no messages, sleeping")
            time.sleep(1)
            continue
        for m in msgs:
            log.info("handling message %s", m.id)
            handle(m)
            m.ack()
'''


def log_noise():
    c = Case("happy-worker-log-noise", "happy", "Log noise reduction: polling chatter to DEBUG, production level WARNING",
             ["GOAL_MET", "log-noise"],
             "Cut log noise from the billing worker: nothing inside its polling loop logs at INFO, and the production logging config sets the billing logger to WARNING.")
    c.ws("src/billing_worker.py", WORKER)
    c.ws("config/logging.prod.ini", "[loggers]\nkeys=root,billing\n\n[logger_root]\nlevel=INFO\nhandlers=json\n\n[logger_billing]\nlevel=INFO\nhandlers=json\nqualname=billing\npropagate=0\n")
    c.check_script("lognoise", "lognoise.py", '''#!/usr/bin/env python3
import re, sys
src = open("src/billing_worker.py").read()
loop = src.split("while True:", 1)[1] if "while True:" in src else ""
bad = []
if re.search(r"log\\.info\\(", loop):
    bad.append("INFO logging inside the polling loop")
if "handle(m)" not in loop:
    bad.append("the loop no longer handles messages")
ini = open("config/logging.prod.ini").read()
m = re.search(r"\\[logger_billing\\][^\\[]*?level=(\\w+)", ini)
if not m or m.group(1) != "WARNING":
    bad.append("logger_billing level is not WARNING")
print("\\n".join(bad) or "quiet")
sys.exit(1 if bad else 0)
''')
    c.predicate = ("check", "lognoise")
    tasks = [
        task("t1", "Move the per-poll and per-message log lines in src/billing_worker.py to DEBUG", V.contains("src/billing_worker.py", 'log.debug("polling queue')),
        task("t2", "Set [logger_billing] level=WARNING in config/logging.prod.ini", V.contains("config/logging.prod.ini", "level=WARNING")),
    ]
    c.run([
        plan_call(tasks),
        *steps("t1", [read("src/billing_worker.py"), write("src/billing_worker.py", WORKER.replace("log.info(", "log.debug("))],
               "Three INFO lines in the loop are DEBUG now (about 4,300 lines/hour per worker at idle)."),
        *steps("t2", [read("config/logging.prod.ini"), write("config/logging.prod.ini", "[loggers]\nkeys=root,billing\n\n[logger_root]\nlevel=INFO\nhandlers=json\n\n[logger_billing]\nlevel=WARNING\nhandlers=json\nqualname=billing\npropagate=0\n")],
               "Billing logger at WARNING in production."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2"],
                "files_contain": {"src/billing_worker.py": 'log.debug("handling message'}}
    return c


def release_notes():
    c = Case("happy-release-notes-post", "happy", "Release 2.4.0: changelog, announcement post, version bump",
             ["GOAL_MET", "post_message"],
             "Ship release 2.4.0 of the deploy CLI: write the changelog entry, announce it in #releases, and bump the version.")
    c.ws("deploycli/__init__.py", '__version__ = "2.3.2"\n')
    c.ws("CHANGELOG.md", "# Changelog\n\n## Unreleased\n- `deploy rollback --to <sha>` (#412)\n- Faster manifest diff on large repos (#418)\n- Fix: `--dry-run` no longer contacts the registry (#421)\n\n## 2.3.2\n- Fix: retry on 502 from the registry.\n")
    c.check_script("release", "release.sh", '''#!/bin/sh
grep -q '__version__ = "2.4.0"' deploycli/__init__.py || { echo "version is not 2.4.0"; exit 1; }
grep -q '^## 2.4.0' CHANGELOG.md || { echo "no 2.4.0 changelog entry"; exit 1; }
echo "2.4.0 ready"
''')
    c.predicate = ("check", "release")
    tasks = [
        task("t1", "Turn the Unreleased section of CHANGELOG.md into ## 2.4.0", V.contains("CHANGELOG.md", "## 2.4.0")),
        task("t2", "Announce 2.4.0 in #releases", V.outbox("release-deploycli-2.4.0")),
        task("t3", "Bump deploycli.__version__ to 2.4.0", V.contains("deploycli/__init__.py", '"2.4.0"')),
    ]
    c.run([
        plan_call(tasks),
        *steps("t1", [read("CHANGELOG.md"), write("CHANGELOG.md", "# Changelog\n\n## Unreleased\n\n## 2.4.0\n- `deploy rollback --to <sha>` (#412)\n- Faster manifest diff on large repos (#418)\n- Fix: `--dry-run` no longer contacts the registry (#421)\n\n## 2.3.2\n- Fix: retry on 502 from the registry.\n")],
               "Changelog has 2.4.0."),
        *steps("t2", [post("#releases", "deploycli 2.4.0 is out: `deploy rollback --to <sha>`, faster manifest diffs, and --dry-run no longer touches the registry. Changelog: CHANGELOG.md#240", "release-deploycli-2.4.0")],
               "Announced in #releases."),
        *steps("t3", [write("deploycli/__init__.py", '__version__ = "2.4.0"\n')], "Version bumped."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2", "t3"], "outbox_total": 1,
                "outbox_contains": ["2.4.0", "rollback"], "outbox_key_count": {"release-deploycli-2.4.0": 1}}
    return c


CHECKOUT_PY = '''from app import flags
from app.checkout import legacy, v2


def checkout(cart, user):
    if flags.enabled("new_checkout_v2", user=user):
        return v2.checkout(cart, user)
    return legacy.checkout(cart, user)


def checkout_preview(cart, user):
    if not flags.enabled("new_checkout_v2", user=user):
        return legacy.preview(cart)
    return v2.preview(cart, user)
'''


def flag_cleanup():
    c = Case("happy-feature-flag-cleanup", "happy", "Remove a fully rolled-out feature flag from config and code",
             ["GOAL_MET", "config-change", "refactor"],
             "Remove the fully rolled-out feature flag new_checkout_v2: delete it from config/flags.json and make every code path that read it use the v2 checkout unconditionally.")
    c.ws("app/checkout/entry.py", CHECKOUT_PY)
    c.ws("config/flags.json", json.dumps({"new_checkout_v2": {"rollout": 100, "since": "2026-06-01"},
                                          "dark_mode": {"rollout": 35}, "invoice_pdf_v3": {"rollout": 0}}, indent=2) + "\n")
    c.check_cmd("flag_gone_code", ["sh", "-c", "! grep -rn new_checkout_v2 app"])
    c.check_script("flag_gone", "flag_gone.sh", '''#!/bin/sh
if grep -rn "new_checkout_v2" app config; then echo "flag still referenced"; exit 1; fi
python3 -c 'import json; f = json.load(open("config/flags.json")); assert set(f) == {"dark_mode", "invoice_pdf_v3"}, f' || exit 1
grep -q "v2.checkout(cart, user)" app/checkout/entry.py || { echo "v2 path lost"; exit 1; }
echo "flag removed"
''')
    c.predicate = ("check", "flag_gone")
    tasks = [
        task("t1", "Make app/checkout/entry.py call v2 unconditionally (drop both flag reads)", V.check("flag_gone_code")),
        task("t2", "Delete new_checkout_v2 from config/flags.json", V.check("flag_gone")),
    ]
    c.run([
        plan_call(tasks),
        *steps("t1", [read("app/checkout/entry.py"), write("app/checkout/entry.py", '''from app.checkout import v2


def checkout(cart, user):
    return v2.checkout(cart, user)


def checkout_preview(cart, user):
    return v2.preview(cart, user)
''')], "Both flag reads removed; legacy import dropped."),
        *steps("t2", [read("config/flags.json"), write("config/flags.json", json.dumps({"dark_mode": {"rollout": 35}, "invoice_pdf_v3": {"rollout": 0}}, indent=2) + "\n")],
               "Flag deleted; the other two flags untouched."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2"], "parked": [],
                "files_contain": {"config/flags.json": "dark_mode"}}
    return c


EN = {"cart.title": "Your cart", "cart.empty": "Your cart is empty", "cart.items": "{count} items",
      "checkout.pay": "Pay {amount}", "checkout.address": "Shipping address", "orders.reorder": "Order again",
      "orders.track": "Track package"}
DE_PARTIAL = {"cart.title": "Dein Warenkorb", "cart.empty": "Dein Warenkorb ist leer", "checkout.address": "Lieferadresse"}
DE_FULL = {"cart.title": "Dein Warenkorb", "cart.empty": "Dein Warenkorb ist leer", "cart.items": "{count} Artikel",
           "checkout.pay": "{amount} bezahlen", "checkout.address": "Lieferadresse", "orders.reorder": "Erneut bestellen",
           "orders.track": "Sendung verfolgen"}


def i18n_keys():
    c = Case("happy-i18n-missing-keys", "happy", "Fill the German locale's missing keys, keeping placeholders",
             ["GOAL_MET", "i18n"],
             "Fill in the German translations missing from locales/de.json so it has every key locales/en.json has, with the same {placeholders}.")
    c.ws("locales/en.json", json.dumps(EN, indent=2, ensure_ascii=False) + "\n")
    c.ws("locales/de.json", json.dumps(DE_PARTIAL, indent=2, ensure_ascii=False) + "\n")
    c.check_script("i18n", "i18n.py", '''#!/usr/bin/env python3
import json, re, sys
en = json.load(open("locales/en.json"))
de = json.load(open("locales/de.json"))
bad = [k for k in en if not de.get(k, "").strip()]
bad += [f"{k}: placeholders differ" for k in en if k in de and set(re.findall(r"{\\w+}", en[k])) != set(re.findall(r"{\\w+}", de[k]))]
bad += [f"{k}: untranslated" for k in en if de.get(k) == en[k]]
print("\\n".join(bad) or "de complete")
sys.exit(1 if bad else 0)
''')
    c.predicate = ("check", "i18n")
    tasks = [task("t1", "Add the 4 missing keys to locales/de.json", V.check("i18n"))]
    c.run([
        plan_call(tasks),
        *steps("t1", [read("locales/en.json"), read("locales/de.json"), write("locales/de.json", json.dumps(DE_FULL, indent=2, ensure_ascii=False) + "\n")],
               "Added cart.items, checkout.pay, orders.reorder, orders.track; placeholders kept."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"], "files_contain": {"locales/de.json": "{amount} bezahlen"}}
    return c


ORDERS_REPO = '''def list_orders(db, customer_id):
    orders = db.query("SELECT id, placed_at, total FROM orders WHERE customer_id = %s ORDER BY placed_at DESC LIMIT 50", customer_id)
    for o in orders:
        o["items"] = db.query("SELECT sku, qty, price FROM order_items WHERE order_id = %s", o["id"])
    return orders
'''

ORDERS_REPO_FIXED = '''from itertools import groupby

ORDERS_WITH_ITEMS = """
SELECT o.id, o.placed_at, o.total, i.sku, i.qty, i.price
FROM (SELECT id, placed_at, total FROM orders WHERE customer_id = %s ORDER BY placed_at DESC LIMIT 50) o
LEFT JOIN order_items i ON i.order_id = o.id
ORDER BY o.placed_at DESC, o.id
"""


def list_orders(db, customer_id):
    rows = db.query(ORDERS_WITH_ITEMS, customer_id)  # one round trip instead of 1 + N
    out = []
    for oid, group in groupby(rows, key=lambda r: r["id"]):
        group = list(group)
        head = group[0]
        items = [{"sku": r["sku"], "qty": r["qty"], "price": r["price"]} for r in group if r["sku"] is not None]
        out.append({"id": oid, "placed_at": head["placed_at"], "total": head["total"], "items": items})
    return out
'''


def orders_n_plus_one():
    c = Case("happy-orders-n-plus-one", "happy", "Latency target met by removing an N+1 query",
             ["GOAL_MET", "latency-target", "harness-measures-goal"],
             "Bring p95 of GET /api/orders under 250ms by removing the N+1 query in the orders repository.")
    c.ws("app/orders_repo.py", ORDERS_REPO)
    c.ws("docs/perf/README.md", "Profiles go in docs/perf/<endpoint>.md: top spans, query counts, p95 before/after.\n")
    c.check_script("p95_orders", "p95_orders.sh", '''#!/bin/sh
# Stand-in for the orders load test: one query per order item list costs ~9ms each at p95.
if grep -q "LEFT JOIN order_items" app/orders_repo.py && ! grep -q "WHERE order_id = %s" app/orders_repo.py; then p95=190; else p95=640; fi
echo "GET /api/orders p95_ms=$p95 (target < 250)"
[ "$p95" -lt 250 ]
''')
    c.predicate = ("check", "p95_orders")
    tasks = [
        task("t1", "Profile GET /api/orders and record the query pattern in docs/perf/orders.md", V.exists("docs/perf/orders.md")),
        task("t2", "Replace the per-order items query in app/orders_repo.py with one JOIN", V.contains("app/orders_repo.py", "LEFT JOIN order_items")),
        task("t3", "Re-run the orders load test", V.check("p95_orders")),
    ]
    c.run([
        plan_call(tasks),
        *steps("t1", [read("app/orders_repo.py"), write("docs/perf/orders.md", "# GET /api/orders\n\n- 1 + N queries: 1 for orders (LIMIT 50), then one order_items query per order.\n- p95 640ms at 50 orders/page; ~9ms per items query.\n- Fix: fetch items with a JOIN on the limited orders subquery.\n")],
               "Profile written: the items query runs once per order."),
        *steps("t2", [write("app/orders_repo.py", ORDERS_REPO_FIXED)], "One JOIN now; grouping in Python keeps the response shape."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2"], "queue_left": ["t3"],
                "files_contain": {"app/orders_repo.py": "one round trip"}}
    return c


SIGNUP = '''def signup(form, users):
    email = form["email"]
    if users.exists(email):
        raise ValueError("email already registered")
    return users.create(email=email, name=form.get("name", ""))
'''

SIGNUP_FIXED = '''import re

EMAIL = re.compile(r"^[^@\\s]+@[^@\\s]+\\.[A-Za-z]{2,}$")


def signup(form, users):
    email = form.get("email", "").strip()
    if not EMAIL.match(email):
        raise ValueError("invalid email")
    if users.exists(email):
        raise ValueError("email already registered")
    return users.create(email=email, name=form.get("name", ""))
'''

SIGNUP_TEST = '''import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
from signup import signup  # noqa: E402


class Users:
    def __init__(self):
        self.rows = []

    def exists(self, email):
        return email in self.rows

    def create(self, email, name):
        self.rows.append(email)
        return email


class Signup(unittest.TestCase):
    def test_valid(self):
        self.assertEqual(signup({"email": "ana@example.org"}, Users()), "ana@example.org")

    def test_rejects_malformed(self):
        for bad in ["", "ana", "ana@", "@example.org", "ana@example", "a b@example.org"]:
            with self.assertRaises(ValueError, msg=bad):
                signup({"email": bad}, Users())


if __name__ == "__main__":
    unittest.main()
'''


def openai_signup():
    c = Case("happy-openai-signup-validation", "happy", "OpenAI protocol: tool arguments that are not JSON get an error observation, then the fix lands",
             ["GOAL_MET", "openai-protocol", "malformed-tool-args"],
             "Reject malformed email addresses at signup: src/signup.py must validate the email field and tests/test_signup.py must pass.")
    c.protocol = "openai"
    c.executor = "gpt-5"
    c.planner = "gpt-5"
    c.max_tokens = 4096
    c.ws("src/signup.py", SIGNUP)
    c.ws("tests/test_signup.py", SIGNUP_TEST)
    c.check_script("tests", "tests.sh", "#!/bin/sh\npython3 -B -m unittest discover -s tests -q 2>&1\n")
    c.predicate = ("check", "tests")
    tasks = [task("t1", "Validate the email in src/signup.py (non-empty local part, domain with a TLD, no spaces)", V.check("tests"))]
    broken_args = '{"path": "src/signup.py", "content": "import re\\n\\nEMAIL = re.compile(r\\"^[^@\\s]+@'
    c.run([
        plan_call(tasks),
        *steps("t1", [read("tests/test_signup.py"), ("write_file", {"__unparsed": broken_args}), write("src/signup.py", SIGNUP_FIXED), run_check("tests")],
               "signup() now rejects malformed emails; both tests pass."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"], "files_contain": {"src/signup.py": "invalid email"}}
    c.comment = "execute/t1/a0/1 sends write_file arguments that are cut off mid-string (not JSON): the harness must answer\nwith an error observation and run nothing; the next turn sends valid arguments."
    return c


NGINX = """server {
    listen 443 ssl http2;
    server_name shop.example.com;
    ssl_certificate     /etc/ssl/shop/2026/fullchain.pem;
    ssl_certificate_key /etc/ssl/shop/2026/privkey.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    location / { proxy_pass http://shop_upstream; }
}
"""


def transient_faults():
    c = Case("happy-transient-429-500", "happy", "Transient 429 and 500/529 responses are retried and the run completes",
             ["GOAL_MET", "transient-429", "transient-500", "error-recovery"],
             "Point the shop's nginx site at the 2027 certificate bundle in /etc/ssl/shop/2027/ before the 2026 certificate expires.")
    c.ws("config/nginx/shop.conf", NGINX)
    c.ws("config/nginx/README.md", "Certificates are provisioned by the platform team under /etc/ssl/shop/<year>/.\n")
    c.check_cmd("cert_2027", ["sh", "-c", "grep -q 'ssl_certificate     /etc/ssl/shop/2027/fullchain.pem' config/nginx/shop.conf && grep -q 'ssl_certificate_key /etc/ssl/shop/2027/privkey.pem' config/nginx/shop.conf && ! grep -q /2026/ config/nginx/shop.conf"])
    c.predicate = ("check", "cert_2027")
    tasks = [task("t1", "Switch ssl_certificate and ssl_certificate_key in config/nginx/shop.conf to /etc/ssl/shop/2027/", V.check("cert_2027"))]
    rl = {"status": 429, "headers": {"retry-after": "0", "content-type": "application/json"},
          "body": {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}}
    e500 = {"status": 500, "headers": {"content-type": "application/json"},
            "body": {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}}
    e529 = {"status": 529, "headers": {"content-type": "application/json"},
            "body": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}}
    calls = [plan_call(tasks, faults=[rl])]
    calls += steps("t1", [read("config/nginx/shop.conf"), write("config/nginx/shop.conf", NGINX.replace("/2026/", "/2027/"))],
                   "Both certificate paths point at /etc/ssl/shop/2027/.")
    calls[2]["faults_before"] = [e500, e529]
    calls[3]["faults_before"] = [rl, e500]
    c.run(calls)
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"], "report": {"model_calls": 4},
                "files_contain": {"config/nginx/shop.conf": "/etc/ssl/shop/2027/privkey.pem"}}
    c.comment = "plan/0 is answered 429 (retry-after 0) first; execute/t1/a0/1 gets 500 then 529; execute/t1/a0/2 gets 429\nthen 500. Failed attempts are never billed, so spend equals the four real replies and model_calls is 4."
    return c


def seeded_faults():
    c = Case("happy-seeded-faults-plan", "happy", "A seeded 429/500 fault plan on every call does not change the outcome or the bill",
             ["GOAL_MET", "faults-plan", "error-recovery"],
             "Raise the reporting service's Postgres connection pool from 10 to 40 and document why in docs/capacity.md.")
    c.case_extra["faults"] = "429=0.3,500=0.2,retry_after=0,seed=11"
    c.ws("services/reporting/config.toml", "[database]\nurl_env = \"REPORTING_DB_URL\"\npool_size = 10\npool_timeout_s = 30\n\n[scheduler]\nworkers = 24\n")
    c.ws("docs/capacity.md", "# Capacity notes\n\n## api\n60 gunicorn workers, pool 20 per process.\n")
    c.check_script("pool", "pool.sh", '''#!/bin/sh
grep -q '^pool_size = 40$' services/reporting/config.toml || { echo "pool_size is not 40"; exit 1; }
grep -q '## reporting' docs/capacity.md || { echo "capacity note missing"; exit 1; }
echo ok
''')
    c.predicate = ("check", "pool")
    tasks = [
        task("t1", "Set pool_size = 40 for the reporting service", V.contains("services/reporting/config.toml", "pool_size = 40")),
        task("t2", "Explain the new pool size in docs/capacity.md (24 scheduler workers + headroom)", V.contains("docs/capacity.md", "## reporting")),
    ]
    c.run([
        plan_call(tasks),
        *steps("t1", [read("services/reporting/config.toml"), write("services/reporting/config.toml", "[database]\nurl_env = \"REPORTING_DB_URL\"\npool_size = 40\npool_timeout_s = 30\n\n[scheduler]\nworkers = 24\n")], "pool_size 10 -> 40."),
        *steps("t2", [write("docs/capacity.md", "# Capacity notes\n\n## api\n60 gunicorn workers, pool 20 per process.\n\n## reporting\n24 scheduler workers each hold a connection during a report; pool 10 queued them (pool_timeout errors nightly). Pool 40 = 24 + headroom for ad-hoc exports. Postgres max_connections is 400.\n")],
               "Documented."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2"], "report": {"model_calls": 6}}
    c.comment = "The case-level fault plan injects 429s (30%) and 500s (20%) on early HTTP attempts of every call, seeded so\nre-runs see the same faults; the replay never faults attempt 3+, so the harness's retries always get through."
    return c


def cache_heavy():
    c = Case("happy-cache-heavy-image-slim", "happy", "Cache-heavy calls are booked on all four usage fields",
             ["GOAL_MET", "cache-usage", "ledger"],
             "Cut the api service's Docker image below 300 MB with a multi-stage build on python:3.12-slim.")
    c.ws("services/api/Dockerfile", "FROM python:3.12\nWORKDIR /app\nCOPY requirements.txt .\nRUN pip install -r requirements.txt\nCOPY . .\nCMD [\"gunicorn\", \"api.wsgi:app\", \"-w\", \"4\", \"-b\", \"0.0.0.0:8000\"]\n")
    c.ws("services/api/requirements.txt", "flask==3.0.3\ngunicorn==22.0.0\npsycopg[binary]==3.2.1\n")
    c.check_script("image_size", "image_size.py", '''#!/usr/bin/env python3
"""Stand-in for `docker image inspect`: size estimated from the Dockerfile's shape."""
import re, sys
df = open("services/api/Dockerfile").read()
froms = re.findall(r"^FROM (\\S+)", df, re.M)
final = froms[-1] if froms else ""
size = {"python:3.12": 1020, "python:3.12-slim": 155}.get(final, 1020)
if len(froms) == 1:
    size += 190  # build toolchain and pip cache left in the runtime image
if "--no-cache-dir" not in df:
    size += 60
print(f"image ~{size} MB (target < 300)")
sys.exit(0 if size < 300 else 1)
''')
    c.predicate = ("check", "image_size")
    tasks = [task("t1", "Rewrite services/api/Dockerfile as a multi-stage build: build wheels on python:3.12, run on python:3.12-slim, pip --no-cache-dir", V.check("image_size"))]
    new_df = """# build stage: compilers and headers stay here
FROM python:3.12 AS build
WORKDIR /src
COPY requirements.txt .
RUN pip wheel --no-cache-dir --wheel-dir /wheels -r requirements.txt

# runtime stage
FROM python:3.12-slim
WORKDIR /app
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/* && rm -rf /wheels
COPY . .
CMD ["gunicorn", "api.wsgi:app", "-w", "4", "-b", "0.0.0.0:8000"]
"""
    c.run([
        plan_call(tasks, usage=u(2400, 310)),
        call("execute/t1/a0/0", tools=[{"name": "read_file", "input": {"path": "services/api/Dockerfile"}}], usage=u(500, 120, cr=0, cw=3500)),
        call("execute/t1/a0/1", tools=[{"name": "write_file", "input": {"path": "services/api/Dockerfile", "content": new_df}}], usage=u(900, 640, cr=20000, cw=0)),
        call("execute/t1/a0/2", tools=[{"name": "run_check", "input": {"name": "image_size"}}], usage=u(700, 90, cr=20000, cw=1200)),
        call("execute/t1/a0/3", text="Multi-stage build: ~155 MB runtime image (was ~1270 MB).", usage=u(600, 150, cr=21200, cw=0)),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"],
                "report": {"usage": {"input_tokens": 5100, "output_tokens": 1310, "cache_read_input_tokens": 61200, "cache_creation_input_tokens": 4700}},
                "spend_usd_min": 0.1182, "spend_usd_max": 0.1183}
    c.auto_spend = False
    c.comment = """Spend by hand, claude-opus-5 at $5/$25 per MTok; cache reads bill 0.1x input, cache writes 1.25x:
  plan/0            2400 in, 310 out                      = 0.012000 + 0.007750             = 0.019750
  execute/t1/a0/0    500 in, 120 out, 3500 cache write    = 0.002500 + 0.003000 + 0.021875  = 0.027375
  execute/t1/a0/1    900 in, 640 out, 20000 cache read    = 0.004500 + 0.016000 + 0.010000  = 0.030500
  execute/t1/a0/2    700 in,  90 out, 20000 read, 1200 w  = 0.003500 + 0.002250 + 0.010000 + 0.007500 = 0.023250
  execute/t1/a0/3    600 in, 150 out, 21200 cache read    = 0.003000 + 0.003750 + 0.010600  = 0.017350
  total                                                                                    = 0.118225
Counting input_tokens and output_tokens alone would book 0.058250."""
    return c


def drift_prune():
    c = Case("happy-drift-prune-dashboard", "happy", "Drift chain pruned at 0.42: dashboard and its auth leave the queue, the run stays on p95",
             ["GOAL_MET", "drift-prune", "drift-chain"], P95_GOAL)
    c.ws("src/search.py", "def search(db, q):\n    return db.execute(SEARCH_SQL, {'q': q}).fetchall()\n")
    c.ws("src/cache.py", "# placeholder: no cache layer yet\n")
    c.check_script("p95", "p95.sh", '''#!/bin/sh
p95=410
grep -q "def cached_search" src/cache.py && p95=$((p95 - 120))
grep -q "normalize_query" src/cache.py && p95=$((p95 - 110))
echo "p95_ms=$p95 (target < 200)"
[ "$p95" -lt 200 ]
''')
    c.predicate = ("check", "p95")
    c.drift = {"every_tasks": 2, "prune_above": 0.3, "halt_above": 0.5}
    tasks = [
        task("t1", "Profile /api/search: record the slowest spans in docs/perf/search.md", V.exists("docs/perf/search.md")),
        task("t2", "Add a read-through cache for search results (src/cache.py cached_search)", V.contains("src/cache.py", "def cached_search")),
        task("t3", "Refactor the cache layer to key on normalize_query(q) so equivalent queries share entries", V.contains("src/cache.py", "normalize_query")),
        task("t4", "Add cache hit/miss counters", V.contains("src/cache.py", "CACHE_HITS")),
        task("t5", "Build a metrics dashboard for the cache counters", V.exists("dashboard/index.html")),
        task("t6", "Add login (auth) to the metrics dashboard", V.exists("dashboard/auth.py")),
    ]
    cache1 = "import hashlib\n\n_cache = {}\n\n\ndef cached_search(db, q, search):\n    key = hashlib.sha1(q.encode()).hexdigest()\n    if key not in _cache:\n        _cache[key] = search(db, q)\n    return _cache[key]\n"
    cache2 = "import hashlib\n\n_cache = {}\n\n\ndef normalize_query(q):\n    return \" \".join(q.lower().split())\n\n\ndef cached_search(db, q, search):\n    key = hashlib.sha1(normalize_query(q).encode()).hexdigest()\n    if key not in _cache:\n        _cache[key] = search(db, q)\n    return _cache[key]\n"
    c.run([
        plan_call(tasks),
        *steps("t1", [read("src/search.py"), write("docs/perf/search.md", "# /api/search profile\n- 71% of p95 in the search_events scan\n- 38% of queries repeat within 60s (case/spacing variants)\n")], "Profiled."),
        *steps("t2", [write("src/cache.py", cache1)], "Read-through cache added."),
        judge_call("judge/2", "t3 (cache keying) and t4 (hit counters) serve the latency goal; t5, a dashboard, and t6, dashboard login, do not reduce p95 at all.", ["t5", "t6"], 0.42),
        *steps("t3", [write("src/cache.py", cache2)], "Cache keyed on the normalized query."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2", "t3"], "pruned": ["t5", "t6"],
                "queue_left": ["t4"], "drift_bands": ["prune"], "files_absent": ["dashboard/index.html", "dashboard/auth.py"]}
    c.comment = "The seed's drift chain (profile -> cache -> refactor -> metrics -> dashboard -> auth). The judge at step 2\nscores 0.42 (> 0.3, <= 0.5): the off-goal tasks are pruned and the run continues to the goal."
    return c


def git_commits():
    c = Case("happy-git-commit-per-task", "happy", "One commit per verified task on the run branch (Travis to GitHub Actions)",
             ["GOAL_MET", "git-commits"],
             "Move CI from Travis to GitHub Actions: .github/workflows/ci.yml must run the same lint and test steps, .travis.yml must be marked retired, and the README badge must point at Actions.")
    c.case_extra["workspace_git"] = True
    c.ws(".travis.yml", "language: python\npython: [\"3.11\", \"3.12\"]\ninstall: pip install -r requirements-dev.txt\nscript:\n  - ruff check .\n  - pytest -q\n")
    c.ws("README.md", "# ledgerkit\n\n[![Build](https://travis-ci.com/acme/ledgerkit.svg?branch=main)](https://travis-ci.com/acme/ledgerkit)\n\nDouble-entry ledger helpers.\n")
    c.ws("requirements-dev.txt", "pytest==8.2.2\nruff==0.5.0\n")
    c.check_script("ci", "ci.sh", '''#!/bin/sh
f=.github/workflows/ci.yml
[ -f $f ] || { echo "no workflow"; exit 1; }
for s in "ruff check ." "pytest -q" "3.11" "3.12"; do grep -q "$s" $f || { echo "workflow lacks $s"; exit 1; }; done
grep -q "RETIRED" .travis.yml || { echo ".travis.yml not retired"; exit 1; }
grep -q "actions/workflows/ci.yml/badge.svg" README.md || { echo "badge still Travis"; exit 1; }
echo "CI on Actions"
''')
    c.predicate = ("check", "ci")
    wf = """name: ci
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        python: ["3.11", "3.12"]
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: ${{ matrix.python }}
      - run: pip install -r requirements-dev.txt
      - run: ruff check .
      - run: pytest -q
"""
    tasks = [
        task("t1", "Add .github/workflows/ci.yml with the Travis matrix and steps", V.contains(".github/workflows/ci.yml", "pytest -q")),
        task("t2", "Mark .travis.yml retired (keep it one release for the mirror)", V.contains(".travis.yml", "RETIRED")),
        task("t3", "Point the README build badge at the Actions workflow", V.contains("README.md", "actions/workflows/ci.yml/badge.svg")),
    ]
    c.run([
        plan_call(tasks),
        *steps("t1", [read(".travis.yml"), write(".github/workflows/ci.yml", wf)], "Workflow mirrors the Travis matrix."),
        *steps("t2", [write(".travis.yml", "# RETIRED 2026-11: CI runs on GitHub Actions (.github/workflows/ci.yml).\n# Kept one release for the internal mirror; delete after 1.9.\nlanguage: python\npython: [\"3.11\", \"3.12\"]\ninstall: pip install -r requirements-dev.txt\nscript:\n  - ruff check .\n  - pytest -q\n")], "Travis config marked retired."),
        *steps("t3", [read("README.md"), write("README.md", "# ledgerkit\n\n[![ci](https://github.com/acme/ledgerkit/actions/workflows/ci.yml/badge.svg)](https://github.com/acme/ledgerkit/actions/workflows/ci.yml)\n\nDouble-entry ledger helpers.\n")], "Badge updated."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2", "t3"], "commits_count": 3}
    return c


HEALTH = '''import os

from flask import Blueprint, jsonify

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz():
    return jsonify(status="ok")
'''


def second_attempt():
    c = Case("happy-second-attempt-verified", "happy", "The first attempt misses the verify; the retry lands it",
             ["GOAL_MET", "retry"],
             "Make /healthz report the build's git SHA (from the BUILD_SHA environment variable) so the deploy checker can confirm rollouts.")
    c.ws("app/health.py", HEALTH)
    c.ws("deploy/checker.md", "The deploy checker polls /healthz until `build_sha` equals the SHA it deployed.\n")
    c.check_cmd("health_sha", ["grep", "-q", 'build_sha=os.environ.get("BUILD_SHA", "unknown")', "app/health.py"])
    c.predicate = ("check", "health_sha")
    tasks = [task("t1", "Return build_sha from BUILD_SHA in the /healthz response", V.check("health_sha"))]
    c.run([
        plan_call(tasks),
        *steps("t1", [read("app/health.py"), write("app/health.py", HEALTH.replace('status="ok"', 'status="ok", version=os.environ.get("APP_VERSION")'))],
               "Added the version to /healthz."),
        *steps("t1", [read("deploy/checker.md"), write("app/health.py", HEALTH.replace('status="ok"', 'status="ok", build_sha=os.environ.get("BUILD_SHA", "unknown")'))],
               "The checker reads build_sha, not version: /healthz now returns build_sha from BUILD_SHA.", attempt=1),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"], "parked": [],
                "files_contain": {"app/health.py": "build_sha"}}
    return c


PKG = {"name": "ops-dashboard", "version": "3.2.0",
       "dependencies": {"react": "18.3.1", "react-dom": "18.3.1", "moment": "2.30.1", "chart.js": "4.4.3", "react-chartjs-2": "5.2.0"}}


def replan_bundle():
    c = Case("happy-replan-bundle-size", "happy", "The plan runs dry short of the goal; the replanner adds the task that gets there",
             ["GOAL_MET", "replan"],
             "Get the ops dashboard's main JS bundle under 250 KB gzipped.")
    c.ws("package.json", json.dumps(PKG, indent=2) + "\n")
    c.ws("src/format.js", "import moment from 'moment';\n\nexport const day = (ts) => moment(ts).format('YYYY-MM-DD');\nexport const ago = (ts) => moment(ts).fromNow();\n")
    c.ws("src/App.jsx", "import React from 'react';\nimport Charts from './charts/Charts';\nimport { day } from './format';\n\nexport default function App({ data }) {\n  return (<main><h1>Ops {day(Date.now())}</h1><Charts data={data} /></main>);\n}\n")
    c.check_script("bundle", "bundle.py", '''#!/usr/bin/env python3
"""Stand-in for `vite build` + gzip size of the main chunk, from what is imported eagerly."""
import json, re, sys
deps = json.load(open("package.json"))["dependencies"]
app = open("src/App.jsx").read()
size = 150                                   # react + react-dom + app code
if "moment" in deps or "from 'moment'" in open("src/format.js").read():
    size += 72
elif "date-fns" in deps:
    size += 6
if re.search(r"^import Charts from", app, re.M):
    size += 96                               # chart.js in the main chunk
print(f"main chunk ~{size} KB gzip (target < 250)")
sys.exit(0 if size < 250 else 1)
''')
    c.predicate = ("check", "bundle")
    pkg2 = dict(PKG)
    pkg2["dependencies"] = {k: v for k, v in PKG["dependencies"].items() if k != "moment"}
    pkg2["dependencies"]["date-fns"] = "3.6.0"
    tasks = [task("t1", "Replace moment with date-fns in src/format.js and package.json", V.contains("package.json", "date-fns"))]
    tasks2 = [task("t2", "Lazy-load the charts (React.lazy + Suspense) so chart.js leaves the main chunk", V.contains("src/App.jsx", "React.lazy"))]
    c.run([
        plan_call(tasks),
        *steps("t1", [read("src/format.js"), write("src/format.js", "import { format, formatDistanceToNow } from 'date-fns';\n\nexport const day = (ts) => format(ts, 'yyyy-MM-dd');\nexport const ago = (ts) => formatDistanceToNow(ts, { addSuffix: true });\n"),
                      write("package.json", json.dumps(pkg2, indent=2) + "\n")], "moment replaced by date-fns (tree-shaken)."),
        plan_call(tasks2, key="replan/0"),
        *steps("t2", [read("src/App.jsx"), write("src/App.jsx", "import React, { Suspense } from 'react';\nimport { day } from './format';\n\nconst Charts = React.lazy(() => import('./charts/Charts'));\n\nexport default function App({ data }) {\n  return (\n    <main>\n      <h1>Ops {day(Date.now())}</h1>\n      <Suspense fallback={<p>Loading charts...</p>}><Charts data={data} /></Suspense>\n    </main>\n  );\n}\n")],
               "Charts load in their own chunk now."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2"], "report": {"model_calls": 9},
                "files_contain": {"src/App.jsx": "React.lazy"}}
    c.comment = "After t1 the queue is empty and the main chunk is still ~252 KB: the harness asks the replanner (replan/0),\nwhich adds t2; after t2 the predicate passes."
    return c


SESSION = '''import time

SESSION_TTL_S = 1800


def is_expired(session, now=None):
    return time.time() - session["created_at"] > SESSION_TTL_S
'''

SESSION_FIXED = '''import time

SESSION_TTL_S = 1800


def is_expired(session, now=None):
    now = time.time() if now is None else now
    return now - session["created_at"] > SESSION_TTL_S
'''

SESSION_TEST = '''import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
from session import SESSION_TTL_S, is_expired  # noqa: E402


class Expiry(unittest.TestCase):
    def test_session_expiry(self):
        s = {"created_at": 1_700_000_000}
        self.assertFalse(is_expired(s, now=1_700_000_000 + SESSION_TTL_S))
        self.assertTrue(is_expired(s, now=1_700_000_000 + SESSION_TTL_S + 1))


if __name__ == "__main__":
    unittest.main()
'''


def flaky_variants():
    c = Case("happy-flaky-test-three-variants", "happy", "Three cassette variants, three paths to the same verified fix",
             ["GOAL_MET", "variants", "retry", "hallucinated-tool"],
             "Fix the flaky test test_session_expiry: is_expired must honour the injected clock so the test passes at any wall-clock time.")
    c.ws("src/session.py", SESSION)
    c.ws("tests/test_session.py", SESSION_TEST)
    c.check_script("tests", "tests.sh", "#!/bin/sh\npython3 -B -m unittest discover -s tests -q 2>&1\n")
    c.predicate = ("check", "tests")
    tasks = [task("t1", "Make is_expired use the `now` argument when given", V.check("tests"))]
    c.run([
        plan_call(tasks),
        *steps("t1", [read("src/session.py"), write("src/session.py", SESSION_FIXED), run_check("tests")], "is_expired honours now=; test passes."),
    ])
    c.run([
        plan_call(tasks),
        *steps("t1", [read("tests/test_session.py"), write("src/session.py", SESSION.replace("SESSION_TTL_S = 1800", "SESSION_TTL_S = 1801"))],
               "Bumped the TTL by a second to absorb clock skew."),
        *steps("t1", [run_check("tests"), read("src/session.py"), write("src/session.py", SESSION_FIXED), run_check("tests")],
               "The real bug: `now` was ignored. Fixed; test passes.", attempt=1),
    ])
    c.run([
        plan_call(tasks),
        *steps("t1", [("pytest", {"args": ["-k", "expiry"]}), read("src/session.py"), write("src/session.py", SESSION_FIXED), run_check("tests")],
               "No pytest tool here; used run_check. Fixed is_expired."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"], "parked": [],
                "files_contain": {"src/session.py": "now = time.time() if now is None else now"}}
    c.comment = "Run variant 0 fixes it directly, variant 1 misses on the first attempt and is verified on the retry,\nvariant 2 first calls a tool that does not exist (pytest). Spend bounds span the three variants."
    c.deliberate = {'tools': ['pytest']}  # misuses scripted on purpose (case_check.rs refuses undeclared ones)
    return c


CRON = """apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly-report
spec:
  schedule: "0 2 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - name: report
              image: registry.internal/reports:1.14.2
              args: ["nightly"]
          restartPolicy: OnFailure
"""


def cron_hallucinated():
    c = Case("happy-cron-hallucinated-tool", "happy", "A hallucinated shell tool gets an error observation and runs nothing; the edit lands via write_file",
             ["GOAL_MET", "hallucinated-tool", "config-change"],
             "The nightly report CronJob must run at 06:30 Europe/Berlin (it runs at 02:00 UTC); fix deploy/cron/nightly-report.yaml.")
    c.ws("deploy/cron/nightly-report.yaml", CRON)
    c.check_cmd("cron", ["sh", "-c", "grep -q 'schedule: \"30 6 \\* \\* \\*\"' deploy/cron/nightly-report.yaml && grep -q 'timeZone: \"Europe/Berlin\"' deploy/cron/nightly-report.yaml"])
    c.predicate = ("check", "cron")
    tasks = [task("t1", "Set schedule 30 6 * * * with timeZone Europe/Berlin on the CronJob", V.check("cron"))]
    fixed = CRON.replace('  schedule: "0 2 * * *"\n', '  schedule: "30 6 * * *"\n  timeZone: "Europe/Berlin"\n')
    c.run([
        plan_call(tasks),
        *steps("t1", [("bash", {"command": "sed -i 's/0 2 \\* \\* \\*/30 6 * * */' deploy/cron/nightly-report.yaml"}),
                      read("deploy/cron/nightly-report.yaml"), write("deploy/cron/nightly-report.yaml", fixed)],
               "Schedule is 30 6 * * * in Europe/Berlin (spec.timeZone, Kubernetes >= 1.27)."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"],
                "files_contain": {"deploy/cron/nightly-report.yaml": 'timeZone: "Europe/Berlin"'}}
    c.deliberate = {'tools': ['bash']}  # misuses scripted on purpose (case_check.rs refuses undeclared ones)
    return c


def alert_rule():
    c = Case("happy-checkout-5xx-alert-rule", "happy", "Alerting: a paging Prometheus rule with a runbook",
             ["GOAL_MET", "config-change", "docs"],
             "Page the on-call when the checkout 5xx ratio exceeds 2% for 10 minutes: add the Prometheus rule and a runbook it links to.")
    c.ws("alerts/checkout.rules.yml", "groups:\n  - name: checkout\n    rules:\n      - alert: CheckoutLatencyHigh\n        expr: histogram_quantile(0.95, sum(rate(http_request_duration_seconds_bucket{service=\"checkout\"}[5m])) by (le)) > 0.8\n        for: 15m\n        labels:\n          severity: ticket\n")
    c.ws("docs/runbooks/README.md", "One runbook per alert: docs/runbooks/<alert-name>.md\n")
    c.check_script("alert", "alert.py", '''#!/usr/bin/env python3
import os, re, sys
rules = open("alerts/checkout.rules.yml").read()
m = re.search(r"- alert: CheckoutHigh5xxRatio\\n(.*?)(?=\\n      - alert:|\\Z)", rules, re.S)
bad = []
if not m:
    bad.append("no CheckoutHigh5xxRatio rule")
else:
    r = m.group(1)
    if not re.search(r'status=~"5\\.\\."', r) or "> 0.02" not in r:
        bad.append("expr must be the 5xx ratio > 0.02")
    if "for: 10m" not in r:
        bad.append("for: 10m")
    if "severity: page" not in r:
        bad.append("severity: page")
    link = re.search(r"runbook_url: (\\S+)", r)
    if not link or not os.path.isfile(link.group(1)):
        bad.append("runbook_url must name an existing runbook file")
if "CheckoutLatencyHigh" not in rules:
    bad.append("existing rule lost")
print("\\n".join(bad) or "alert ok")
sys.exit(1 if bad else 0)
''')
    c.predicate = ("check", "alert")
    rule = '''      - alert: CheckoutHigh5xxRatio
        expr: sum(rate(http_requests_total{service="checkout",status=~"5.."}[5m])) / sum(rate(http_requests_total{service="checkout"}[5m])) > 0.02
        for: 10m
        labels:
          severity: page
        annotations:
          summary: "Checkout 5xx ratio above 2% for 10m"
          runbook_url: docs/runbooks/CheckoutHigh5xxRatio.md
'''
    tasks = [
        task("t1", "Write docs/runbooks/CheckoutHigh5xxRatio.md (dashboards, recent deploys, rollback)", V.exists("docs/runbooks/CheckoutHigh5xxRatio.md")),
        task("t2", "Add the CheckoutHigh5xxRatio rule to alerts/checkout.rules.yml", V.check("alert")),
    ]
    c.run([
        plan_call(tasks),
        *steps("t1", [write("docs/runbooks/CheckoutHigh5xxRatio.md", "# CheckoutHigh5xxRatio\n\n1. Open the checkout dashboard; split 5xx by route and upstream.\n2. Was there a deploy in the last hour? `deploy rollback --to <previous sha>`.\n3. If card_gateway is failing, flip payments to the secondary gateway (config/payments.yaml).\n")], "Runbook written."),
        *steps("t2", [read("alerts/checkout.rules.yml"), write("alerts/checkout.rules.yml", open_rules_with(rule))], "Rule added (ratio of 5xx over all checkout requests)."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1", "t2"],
                "files_contain": {"alerts/checkout.rules.yml": "severity: page"}}
    return c


def open_rules_with(rule):
    return "groups:\n  - name: checkout\n    rules:\n      - alert: CheckoutLatencyHigh\n        expr: histogram_quantile(0.95, sum(rate(http_request_duration_seconds_bucket{service=\"checkout\"}[5m])) by (le)) > 0.8\n        for: 15m\n        labels:\n          severity: ticket\n" + rule


def cases():
    return [search_p95_index(), orders_fk_migration(), dedupe_customers(), normalize_dates(), docs_pagination(),
            fix_pricing_test(), remove_db_password(), bump_requests(), http_timeouts(), log_noise(), release_notes(),
            flag_cleanup(), i18n_keys(), orders_n_plus_one(), openai_signup(), transient_faults(), seeded_faults(),
            cache_heavy(), drift_prune(), git_commits(), second_attempt(), replan_bundle(), flaky_variants(),
            cron_hallucinated(), alert_rule()]
