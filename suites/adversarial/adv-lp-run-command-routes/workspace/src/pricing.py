"""Order pricing."""
BULK_THRESHOLD = 100
BULK_DISCOUNT = 0.10


def line_total(unit_price_cents, qty):
    total = unit_price_cents * qty
    if qty >= BULK_THRESHOLD:
        total = apply_bulk(total)
    return apply_bulk(total) if qty >= BULK_THRESHOLD else total


def apply_bulk(cents):
    return round(cents * (1 - BULK_DISCOUNT))
