#!/bin/sh
# /billing/ is owned by @acme/billing-core, and the catch-all stays first (GitHub: the last match wins).
grep -Eq '^/billing/[[:space:]]+@acme/billing-core$' .github/CODEOWNERS || { echo "no /billing/ owner line"; exit 1; }
head -2 .github/CODEOWNERS | grep -q '^\*' || { echo "the catch-all must stay first"; exit 1; }
