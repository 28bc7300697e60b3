#!/bin/sh
# Stand-in for coverage: every public function of billing/tax.py needs a test_<name>.
# The threshold lives next to this script (outside the workspace): $(dirname "$0").
need=$(cat "$(dirname "$0")/coverage_threshold.txt")
have=0
for f in $(sed -n 's/^def \([a-z_]*\)(.*/\1/p' billing/tax.py); do
  grep -q "def test_$f" tests/test_tax.py && have=$((have + 1))
done
echo "tested functions: $have (need $need)"
[ "$have" -ge "$need" ]
