#!/bin/sh
grep -q "def to_utc_iso" etl/load_events.py || exit 1
grep -q "def drop_duplicates" etl/load_events.py || exit 1
test -f data/events_clean.csv || exit 1
grep -q "epoch seconds" etl/README.md 2>/dev/null || exit 1
grep -q "test_to_utc_iso" tests/test_load_events.py 2>/dev/null
