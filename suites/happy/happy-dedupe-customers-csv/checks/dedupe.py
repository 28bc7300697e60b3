#!/usr/bin/env python3
"""customers.csv has one row per normalized email, and each kept row is the newest of its group."""
import csv, sys

ORIGINAL = {  # normalized email -> newest updated_at in the original export
    "alice.nguyen@example.com": "2026-05-19T16:40:00Z", "bob.ortiz@example.com": "2026-01-11T08:00:00Z",
    "carla.meier@example.com": "2026-06-07T11:11:00Z", "dev.patel@example.com": "2026-02-14T12:00:00Z",
    "emi.tanaka@example.com": "2026-04-01T18:20:00Z", "farid.haddad@example.com": "2026-03-28T13:30:00Z",
    "gita.rao@example.com": "2026-05-05T06:55:00Z", "hana.kim@example.com": "2026-06-30T22:10:00Z",
}
rows = list(csv.DictReader(open("data/customers.csv", newline="")))
seen = {}
for r in rows:
    e = r["email"].strip().lower()
    if e in seen:
        sys.exit(f"duplicate email {e}")
    seen[e] = r["updated_at"]
if set(seen) != set(ORIGINAL):
    sys.exit(f"customers lost or invented: {sorted(set(ORIGINAL) ^ set(seen))}")
for e, ts in ORIGINAL.items():
    if seen[e] != ts:
        sys.exit(f"{e}: kept the row from {seen[e]}, newest is {ts}")
print(f"{len(rows)} unique customers")
