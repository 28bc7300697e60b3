#!/bin/sh
grep -q '^status: released$' release/2026-12-04.yaml || { echo "release not marked released"; exit 1; }
