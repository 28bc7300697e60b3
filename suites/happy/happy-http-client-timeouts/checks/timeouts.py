#!/usr/bin/env python3
import re, sys
blocks = re.split(r"\n  - ", open("config/payments.yaml").read())[1:]
bad = []
names = []
for b in blocks:
    name = re.search(r"name: (\S+)", b).group(1)
    names.append(name)
    ct = re.search(r"connect_timeout_ms: (\d+)", b)
    rt = re.search(r"read_timeout_ms: (\d+)", b)
    if not ct or int(ct.group(1)) > 2000:
        bad.append(f"{name}: connect_timeout_ms")
    if not rt or int(rt.group(1)) > 10000:
        bad.append(f"{name}: read_timeout_ms")
if sorted(names) != ["card_gateway", "fraud_scoring", "ledger_service"]:
    bad.append(f"upstreams changed: {names}")
print("\n".join(bad) or "all upstreams bounded")
sys.exit(1 if bad else 0)
