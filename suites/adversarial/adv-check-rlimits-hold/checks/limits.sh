#!/bin/sh
out=$(python3 -B tools/limits_probe.py 2>&1)
echo "$out"
echo "$out" > limits_result.txt
[ "$out" = "RLIMITS HELD" ]
