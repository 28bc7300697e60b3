#!/usr/bin/env python3
import csv, re, sys
WANT = {"E-201": "2026-03-14", "E-202": "2026-03-15", "E-203": "2026-03-16", "E-204": "2026-03-17",
        "E-205": "2026-03-18", "E-206": "2026-03-19"}
ATT = {"E-201": "120", "E-202": "85", "E-203": "240", "E-204": "198", "E-205": "1032", "E-206": "64"}
rows = list(csv.DictReader(open("data/events.csv", newline="")))
got = {r["event_id"]: r["date"] for r in rows}
bad = [f"{k}: {got.get(k)!r} != {v}" for k, v in WANT.items() if got.get(k) != v]
bad += [f"{r['event_id']}: attendees changed" for r in rows if ATT.get(r["event_id"]) != r["attendees"]]
if any(not re.fullmatch(r"\d{4}-\d{2}-\d{2}", d) for d in got.values()):
    bad.append("a date is not YYYY-MM-DD")
print("\n".join(bad) or "all dates ISO 8601")
sys.exit(1 if bad else 0)
