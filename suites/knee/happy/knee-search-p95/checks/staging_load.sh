#!/bin/sh
# Needs what the sandbox does not have: fails the same way every time.
echo "POST https://staging.internal/loadtest: connection refused (no route from the sandbox to staging)"
exit 1
