#!/bin/sh
d=docs/api/README.md
for s in "## Authentication" "## Pagination" "## Errors" "## Rate limits" "## Changelog"; do
  grep -q "$s" $d || { echo "missing section: $s"; exit 1; }
done
grep -q "next_cursor" $d && grep -q "429" $d && grep -q "600 requests per minute" $d
