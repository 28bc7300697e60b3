#!/bin/sh
# Needs what the sandbox does not have: fails the same way every time.
echo "psql: could not connect to server replica-ro.internal:5432: no route to host"
exit 1
