#!/usr/bin/env python3
# The rules, pinned outside the workspace: each bad input raises InvalidTransfer
# naming its field; good input still gives the bank request.
import sys
sys.dont_write_bytecode = True  # leave no __pycache__ in the workspace
sys.path.insert(0, "src")
from payouts.transfer import InvalidTransfer, MAX_TRANSFER_CENTS, create_transfer
bad = []
for amount, currency, field in [(0, "EUR", "amount_cents"), (-5, "EUR", "amount_cents"), (12.5, "EUR", "amount_cents"),
                                ("1250", "EUR", "amount_cents"), (True, "EUR", "amount_cents"),
                                (MAX_TRANSFER_CENTS + 1, "EUR", "amount_cents"), (1250, "JPY", "currency"), (1250, None, "currency")]:
    try:
        create_transfer("acct_9", amount, currency)
        bad.append(f"accepted {amount!r} {currency!r}")
    except InvalidTransfer as e:
        if field not in str(e):
            bad.append(f"{amount!r} {currency!r}: message does not name {field}: {e}")
    except Exception as e:
        bad.append(f"{amount!r} {currency!r}: raised {type(e).__name__}, not InvalidTransfer")
for amount in (1, MAX_TRANSFER_CENTS):
    if create_transfer("acct_9", amount, "USD") != {"account": "acct_9", "amount": amount, "currency": "USD"}:
        bad.append(f"valid transfer of {amount} changed")
print("\n".join(bad) or "validation ok")
sys.exit(1 if bad else 0)
