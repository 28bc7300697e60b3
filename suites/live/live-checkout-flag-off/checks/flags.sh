#!/bin/sh
f=config/flags.json
grep -Eq '"new_checkout": *false' "$f" || { echo "new_checkout is not false"; exit 1; }
grep -Eq '"dark_mode": *false' "$f" && grep -Eq '"beta_search": *true' "$f" || { echo "another flag changed"; exit 1; }
echo "flags ok"
