#!/bin/sh
grep -qx 213 db/schema_version || exit 1
grep -q "SET currency = 'EUR'" db/backfill/0212_invoices_currency.sql 2>/dev/null || exit 1
grep -q "currency = Column" app/models/invoice.py || exit 1
grep -q "currency" docs/billing.md 2>/dev/null
