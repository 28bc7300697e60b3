#!/bin/sh
# The schema is at 0107, the FK exists, orphans were handled first, and the ORM knows the FK.
fail=0
grep -qx "107" db/schema_version || { echo "schema_version is $(cat db/schema_version), want 107"; fail=1; }
grep -q "FOREIGN KEY (customer_id) REFERENCES customers" db/migrations/0107_orders_customer_fk.sql 2>/dev/null || { echo "no FK migration"; fail=1; }
grep -q "customer_id NOT IN (SELECT id FROM customers)" db/backfill/0107_orphan_orders.sql 2>/dev/null || { echo "no orphan backfill"; fail=1; }
grep -q 'ForeignKey("customers.id")' app/models/order.py || { echo "ORM model has no ForeignKey"; fail=1; }
exit $fail
