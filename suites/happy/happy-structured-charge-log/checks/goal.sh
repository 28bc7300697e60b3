#!/bin/sh
# The goal: the call site logs the structured event, and the fields table documents it.
python3 -B "$(dirname "$0")/charge_log.py" || exit 1
grep -q '^| payment charged | .*amount_cents.*charge_id' docs/logging.md || { echo "docs/logging.md: no payment charged row with its fields"; exit 1; }
