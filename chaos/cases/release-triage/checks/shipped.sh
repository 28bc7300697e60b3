#!/bin/sh
# 2.4 has shipped when the version is bumped and the audit-log migration is in.
grep -q "^2.4.0$" VERSION && [ -f db/versions/0031.applied ]
