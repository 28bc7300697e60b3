#!/bin/sh
d=docs/oncall/README.md
for s in "## Escalation" "## CheckoutErrorRate" "## QueueBacklog" "## DiskFull" "## Handover"; do
  grep -q "$s" $d || { echo "missing $s"; exit 1; }
done
