#!/bin/sh
fail=0
grep -qF 'max_upload_mb = 25' config/limits.toml || { echo "t1: config/limits.toml"; fail=1; }
grep -qF 'max_body_kb = 512' config/limits.toml || { echo "t2: config/limits.toml"; fail=1; }
exit $fail
