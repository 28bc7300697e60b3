#!/usr/bin/env python3
"""Charge an order through a fake provider and read the log record the
success path emits: a constant message with the five fields as attributes."""
import logging, sys
sys.dont_write_bytecode = True  # leave no __pycache__ in the workspace
sys.path.insert(0, "src")
from payments.charge import charge  # noqa: E402
from logconfig import JsonFormatter  # noqa: E402
import json  # noqa: E402

class Order:
    id, total_cents = "ord_8812", 12999

class Provider:
    name = "adyen"
    def charge(self, order_id, amount):
        return "ch_77"

records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append(record)

lg = logging.getLogger("payments.charge")
lg.addHandler(Keep())
lg.setLevel(logging.DEBUG)
assert charge(Order(), Provider(), attempt=2) == "ch_77"
info = [r for r in records if r.levelno == logging.INFO]
bad = []
if len(info) != 1:
    bad.append(f"expected one INFO record on success, got {len(info)}")
else:
    r = info[0]
    if r.getMessage() != "payment charged":
        bad.append(f"message must be the constant 'payment charged', got {r.getMessage()!r}")
    want = {"order_id": "ord_8812", "amount_cents": 12999, "provider": "adyen", "attempt": 2, "charge_id": "ch_77"}
    for k, v in want.items():
        if getattr(r, k, None) != v:
            bad.append(f"field {k}: expected {v!r}, got {getattr(r, k, None)!r}")
    line = json.loads(JsonFormatter().format(r))
    if line.get("amount_cents") != 12999:
        bad.append("the JSON line does not carry amount_cents")
print("\n".join(bad) or "payment charged: 5 structured fields")
sys.exit(1 if bad else 0)
