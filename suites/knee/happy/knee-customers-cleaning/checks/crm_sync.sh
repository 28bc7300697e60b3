#!/bin/sh
# Needs what the sandbox does not have: fails the same way every time.
echo "CRM API: 401 Unauthorized (no CRM token in this environment)"
exit 1
