#!/bin/sh
# The workspace tests cover the refusals (at least three assertRaises(InvalidTransfer))
# and pass, and the pinned rules hold.
n=$(grep -c 'assertRaises(InvalidTransfer' tests/test_transfer.py)
[ "$n" -ge 3 ] || { echo "tests/test_transfer.py has $n assertRaises(InvalidTransfer), want at least 3"; exit 1; }
python3 -B -m unittest discover -s tests -q 2>&1 || exit 1
python3 -B "$(dirname "$0")/validation.py"
