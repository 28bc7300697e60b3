from decimal import ROUND_HALF_UP, Decimal


def vat(net_cents, rate):
    return int(net_cents * rate)  # truncates: 1999 * 0.19 = 379.81 -> 379
