#!/bin/sh
fail=0
grep -qx 'pool_size = 16' config/env/prod.toml || { echo "t1: pool_size fails"; fail=1; }
exit $fail
