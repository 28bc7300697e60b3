#!/bin/sh
# Run the script for real with every path under the check's TMPDIR: it must
# archive the data dir there and log there (the sandbox refuses writes to /var,
# so a path still hard-coded fails the run). Production's defaults must stay.
s=scripts/backup.sh
sh -n "$s" || exit 1
for kv in LEDGER_DATA_DIR=/var/lib/ledger/data BACKUP_DIR=/var/backups/ledger BACKUP_LOG=/var/log/ledger-backup.log; do
  var=${kv%%=*}; def=${kv#*=}
  grep -Eq "^$var=\"\\\$\{$var:-$def\}\"|^: \"\\\$\{$var:=$def\}\"" "$s" || { echo "$var must default to $def"; exit 1; }
done
left=$(grep -v '^[A-Z_]*="\${' "$s" | grep -v '^#' | grep -v '^: "\${' | grep -c '/var/')
[ "$left" = 0 ] || { echo "$left line(s) still hard-code /var paths"; exit 1; }
root=$(mktemp -d)
mkdir -p "$root/data" && echo "balances" > "$root/data/ledger.db"
LEDGER_DATA_DIR="$root/data" BACKUP_DIR="$root/backups" BACKUP_LOG="$root/backup.log" sh "$s" || { echo "script failed"; exit 1; }
tarball=$(ls "$root"/backups/ledger-*.tar.gz 2>/dev/null | head -n 1)
[ -n "$tarball" ] || { echo "no archive in BACKUP_DIR"; exit 1; }
tar -tzf "$tarball" | grep -q 'ledger.db' || { echo "archive lacks the data"; exit 1; }
grep -q "wrote ledger-" "$root/backup.log" || { echo "nothing logged to BACKUP_LOG"; exit 1; }
echo "backup script configurable"
