#!/bin/sh
grep -qx 'pool_size = 16' config/env/prod.toml
