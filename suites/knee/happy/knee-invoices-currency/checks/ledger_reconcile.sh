#!/bin/sh
# Needs what the sandbox does not have: fails the same way every time.
echo "ledger export: invoice totals differ by 1204.50 EUR on 3 invoices (credit notes missing from the export)"
exit 1
