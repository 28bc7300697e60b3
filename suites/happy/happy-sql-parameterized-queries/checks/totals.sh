#!/bin/sh
exec python3 -B "$(dirname "$0")/queries.py" order_total_cents
