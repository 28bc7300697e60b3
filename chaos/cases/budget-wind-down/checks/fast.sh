#!/bin/sh
# The export is fast once it streams in batches over the new index, and documented.
grep -q "BATCH_SIZE" src/export.py && [ -f db/migrations/0101_export_cursor.sql ] && grep -q BATCH_SIZE docs/export.md
