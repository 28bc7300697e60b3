#!/bin/sh
# The headers, and the release checklist's item ticked (the post is t2's own verify: the outbox is not the workspace's).
python3 "$(dirname "$0")/headers.py" || exit 1
grep -qF -- "- [x] License headers" RELEASE_CHECKLIST.md || { echo "checklist item not ticked"; exit 1; }
