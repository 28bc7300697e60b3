def refund(captured_cents, already_refunded_cents, amount_cents):
    """Return the new refunded total; refunds may not exceed the captured amount."""
    return already_refunded_cents + amount_cents
