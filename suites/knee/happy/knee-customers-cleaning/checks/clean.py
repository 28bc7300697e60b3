#!/usr/bin/env python3
"""customers_clean.csv: one row per normalized email, ISO dates, ISO country codes, no QA accounts, and the steps documented."""
import csv, re, sys
rows = list(csv.DictReader(open("data/customers_clean.csv", newline="")))
emails = [r["email"] for r in rows]
if len(set(emails)) != len(emails) or any(e != e.strip().lower() for e in emails):
    sys.exit("emails not normalized/unique")
if any(not re.fullmatch(r"\d{4}-\d{2}-\d{2}", r["updated_at"]) for r in rows):
    sys.exit("dates not ISO")
if any(not re.fullmatch(r"[A-Z]{2}", r["country"]) for r in rows):
    sys.exit("countries not ISO-3166 alpha-2")
if any(e.startswith("test+") for e in emails):
    sys.exit("QA accounts left in")
if "normalize_countries" not in open("scripts/clean_customers.py").read():
    sys.exit("cleaning script incomplete")
if "## Cleaning" not in open("data/README.md").read():
    sys.exit("README does not document the cleaning")
print(f"{len(rows)} clean customers")
