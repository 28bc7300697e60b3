#!/bin/sh
# Structural stand-in for a JSON parse (no Python start-up): one flat object.
s=$(tr -d ' \t\r\n' < config/app.json)
case "$s" in
  '{'*'}') ;;
  *) echo "not an object"; exit 1 ;;
esac
case "$s" in *',}'*|*',,'*|*'{,'*) echo "stray comma"; exit 1 ;; esac
for kv in '"port":8080' '"log_level":"info"' '"workers":4'; do
  case "$s" in *"$kv"*) ;; *) echo "missing $kv"; exit 1 ;; esac
done
[ "$(printf '%s' "$s" | tr -cd ':' | wc -c)" -eq 3 ] || { echo "expected exactly 3 keys"; exit 1; }
echo "valid"
