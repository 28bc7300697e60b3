#!/bin/sh
# Needs what the sandbox does not have: fails the same way every time.
echo "snowflake: authentication failed: SNOWFLAKE_PASSWORD is not set"
exit 1
