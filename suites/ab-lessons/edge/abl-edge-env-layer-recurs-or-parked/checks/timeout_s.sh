#!/bin/sh
grep -qx 'timeout_s = 30' config/env/prod.toml
