#!/usr/bin/env python3
import os, re, sys
rules = open("alerts/checkout.rules.yml").read()
m = re.search(r"- alert: CheckoutHigh5xxRatio\n(.*?)(?=\n      - alert:|\Z)", rules, re.S)
bad = []
if not m:
    bad.append("no CheckoutHigh5xxRatio rule")
else:
    r = m.group(1)
    if not re.search(r'status=~"5\.\."', r) or "> 0.02" not in r:
        bad.append("expr must be the 5xx ratio > 0.02")
    if "for: 10m" not in r:
        bad.append("for: 10m")
    if "severity: page" not in r:
        bad.append("severity: page")
    link = re.search(r"runbook_url: (\S+)", r)
    if not link or not os.path.isfile(link.group(1)):
        bad.append("runbook_url must name an existing runbook file")
if "CheckoutLatencyHigh" not in rules:
    bad.append("existing rule lost")
print("\n".join(bad) or "alert ok")
sys.exit(1 if bad else 0)
