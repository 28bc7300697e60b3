#!/bin/sh
f=data/customers.csv
[ "$(head -n 1 "$f")" = "id,name,country" ] || { echo "header changed"; exit 1; }
grep -q 'Untied' "$f" && { echo "typo still present"; exit 1; }
[ "$(grep -c ',United States$' "$f")" -eq 3 ] || { echo "expected 3 United States rows"; exit 1; }
for r in '1,Ana Souza,Brazil' '3,Mei Chen,China' '5,Tom Baker,United Kingdom' '2,John Miller,United States' '4,Sara Lopez,United States' '6,Liz Ward,United States'; do
  grep -qx "$r" "$f" || { echo "row missing or changed: $r"; exit 1; }
done
[ "$(grep -c . "$f")" -eq 7 ] || { echo "expected 7 non-empty lines"; exit 1; }
echo "clean"
