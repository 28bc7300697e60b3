#!/bin/sh
f=db/migrations/0007_add_order_status.sql
[ -f "$f" ] || { echo "$f does not exist"; exit 1; }
grep -qi 'alter table *orders' "$f" || { echo "no ALTER TABLE orders"; exit 1; }
grep -qi 'add column *status' "$f" || { echo "no ADD COLUMN status"; exit 1; }
grep -qi "default *'new'" "$f" || { echo "no DEFAULT 'new'"; exit 1; }
grep -qi 'not null' "$f" || { echo "not NOT NULL"; exit 1; }
echo "migration ok"
