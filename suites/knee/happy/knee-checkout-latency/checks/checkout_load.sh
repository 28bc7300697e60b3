#!/bin/sh
# Needs what the sandbox does not have: fails the same way every time.
echo "k6: dial tcp staging-checkout.internal:443: i/o timeout"
exit 1
