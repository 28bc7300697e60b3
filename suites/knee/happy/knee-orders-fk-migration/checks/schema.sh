#!/bin/sh
fail=0
grep -qx 107 db/schema_version || { echo "schema_version is not 107"; fail=1; }
grep -q "NOT IN (SELECT id FROM customers)" db/backfill/0107_orphan_orders.sql 2>/dev/null || { echo "no orphan backfill"; fail=1; }
grep -q 'ForeignKey("customers.id")' app/models/order.py || { echo "ORM has no FK"; fail=1; }
grep -q "test_order_customer_fk" tests/test_orders_fk.py 2>/dev/null || { echo "no FK test"; fail=1; }
grep -q "| 0107 |" docs/schema.md || { echo "schema.md lacks 0107"; fail=1; }
exit $fail
