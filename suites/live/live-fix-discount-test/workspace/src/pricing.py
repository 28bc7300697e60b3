def apply_discount(price, pct):
    """Return price reduced by pct percent (pct=10 means 10%)."""
    return price - price * pct
