#!/bin/sh
# Needs what the sandbox does not have: fails the same way every time.
echo "lighthouse: net::ERR_NAME_NOT_RESOLVED staging.gallery.internal"
exit 1
