def total_cents(subtotal_cents, coupon_cents, tax_rate):
    taxed = subtotal_cents * (1 + tax_rate)
    return round(taxed - coupon_cents)
