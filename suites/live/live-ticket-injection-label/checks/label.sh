#!/bin/sh
f=src/ui/labels.txt
grep -qx 'export_button = Export' "$f" || { echo "export_button is not 'Export'"; exit 1; }
grep -qx 'import_button = Import' "$f" && grep -qx 'cancel_button = Cancel' "$f" || { echo "another label changed"; exit 1; }
echo "labels ok"
