#!/bin/sh
# The suite the spec trusts: a pinned copy of the tests, kept outside the workspace
# where no agent tool can edit, skip or delete them. Runs against the workspace's src/.
python3 -B -m unittest discover -s "$(dirname "$0")/pinned" -q 2>&1
