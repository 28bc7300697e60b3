#!/bin/sh
# The ORM model has the column the migration adds, and the schema is at 212.
grep -q '^    due_date: date | None = None$' app/models/invoice.py || { echo "Invoice has no due_date"; exit 1; }
grep -qx 212 db/schema_version || { echo "schema_version is not 212"; exit 1; }
