#!/bin/sh
grep -q '^pool_size = 40$' services/reporting/config.toml || { echo "pool_size is not 40"; exit 1; }
grep -q '## reporting' docs/capacity.md || { echo "capacity note missing"; exit 1; }
echo ok
