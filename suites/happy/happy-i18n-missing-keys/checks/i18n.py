#!/usr/bin/env python3
import json, re, sys
en = json.load(open("locales/en.json"))
de = json.load(open("locales/de.json"))
bad = [k for k in en if not de.get(k, "").strip()]
bad += [f"{k}: placeholders differ" for k in en if k in de and set(re.findall(r"{\w+}", en[k])) != set(re.findall(r"{\w+}", de[k]))]
bad += [f"{k}: untranslated" for k in en if de.get(k) == en[k]]
print("\n".join(bad) or "de complete")
sys.exit(1 if bad else 0)
