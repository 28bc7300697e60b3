#!/usr/bin/env python3
# Exactly one 0032 migration, with an up and a down file; the up creates an
# index on events (tenant_id, created_at ...) concurrently, the down drops the
# same index by name, and both are marked no-transaction.
import glob, re, sys
ups = glob.glob("db/migrations/0032_*.up.sql")
if len(ups) != 1:
    sys.exit(f"want one 0032_*.up.sql, found {ups}")
down = ups[0][: -len(".up.sql")] + ".down.sql"
try:
    up_sql, down_sql = open(ups[0]).read(), open(down).read()
except OSError as e:
    sys.exit(f"missing file: {e}")
bad = []
m = re.search(r"CREATE INDEX CONCURRENTLY (?:IF NOT EXISTS )?(\w+)\s+ON events\s*(?:USING btree\s*)?\(\s*tenant_id\s*,\s*created_at\b", up_sql, re.I)
if not m:
    bad.append("up: no CREATE INDEX CONCURRENTLY ... ON events (tenant_id, created_at ...)")
elif not re.search(rf"DROP INDEX CONCURRENTLY (?:IF EXISTS )?{m.group(1)}\s*;", down_sql, re.I):
    bad.append(f"down: does not drop index {m.group(1)} concurrently")
for name, sql in ((ups[0], up_sql), (down, down_sql)):
    if sql.splitlines()[:1] != ["-- migrate:no-transaction"]:
        bad.append(f"{name}: CONCURRENTLY needs '-- migrate:no-transaction' as its first line")
print("\n".join(bad) or "0032 ok")
sys.exit(1 if bad else 0)
