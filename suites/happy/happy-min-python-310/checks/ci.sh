#!/bin/sh
# CI and tox test exactly 3.10, 3.11 and 3.12 (and tox keeps its lint env).
grep -qF 'python-version: ["3.10", "3.11", "3.12"]' .github/workflows/ci.yml || { echo "CI matrix is not 3.10-3.12"; exit 1; }
grep -qx 'envlist = py310, py311, py312, lint' tox.ini || { echo "tox envlist is not py310-py312 + lint"; exit 1; }
echo "ci ok"
