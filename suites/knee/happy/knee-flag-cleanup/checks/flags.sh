#!/bin/sh
! grep -q "enabled('new_checkout')" src/checkout.py || exit 1
! grep -q "enabled('legacy_search')" src/search.py || exit 1
! grep -q "new_checkout\|legacy_search" config/flags.toml || exit 1
grep -q "Removed flags" CHANGELOG.md 2>/dev/null
