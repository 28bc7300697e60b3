#!/bin/sh
# Nightly backup of the ledger's data directory (cron: 02:15 on db-1).
set -eu
stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p /var/backups/ledger
tar -czf "/var/backups/ledger/ledger-$stamp.tar.gz" -C /var/lib/ledger/data .
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) wrote ledger-$stamp.tar.gz" >> /var/log/ledger-backup.log
find /var/backups/ledger -name 'ledger-*.tar.gz' -mtime +14 -exec rm -f {} +
