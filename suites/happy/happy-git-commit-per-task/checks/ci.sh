#!/bin/sh
f=.github/workflows/ci.yml
[ -f $f ] || { echo "no workflow"; exit 1; }
for s in "ruff check ." "pytest -q" "3.11" "3.12"; do grep -q "$s" $f || { echo "workflow lacks $s"; exit 1; }; done
grep -q "RETIRED" .travis.yml || { echo ".travis.yml not retired"; exit 1; }
grep -q "actions/workflows/ci.yml/badge.svg" README.md || { echo "badge still Travis"; exit 1; }
echo "CI on Actions"
