#!/bin/sh
# The warmup is rolled out when the config enables it and the runbook says how.
grep -q "enabled = true" config/warmup.toml && grep -q "warmup" docs/runbook-warmup.md
