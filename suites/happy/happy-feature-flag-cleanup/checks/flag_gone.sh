#!/bin/sh
if grep -rn "new_checkout_v2" app config; then echo "flag still referenced"; exit 1; fi
python3 -c 'import json; f = json.load(open("config/flags.json")); assert set(f) == {"dark_mode", "invoice_pdf_v3"}, f' || exit 1
grep -q "v2.checkout(cart, user)" app/checkout/entry.py || { echo "v2 path lost"; exit 1; }
echo "flag removed"
