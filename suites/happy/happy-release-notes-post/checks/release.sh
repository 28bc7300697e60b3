#!/bin/sh
grep -q '__version__ = "2.4.0"' deploycli/__init__.py || { echo "version is not 2.4.0"; exit 1; }
grep -q '^## 2.4.0' CHANGELOG.md || { echo "no 2.4.0 changelog entry"; exit 1; }
echo "2.4.0 ready"
