"""Charge an order through the configured provider."""
import logging

log = logging.getLogger("payments.charge")


class ChargeError(Exception):
    pass


def charge(order, provider, attempt=1):
    """Charge `order.total_cents` through `provider`; returns the provider's charge id."""
    amount_cents = order.total_cents
    try:
        charge_id = provider.charge(order.id, amount_cents)
    except ChargeError:
        log.warning("charge failed", extra={"order_id": order.id, "provider": provider.name, "attempt": attempt})
        raise
    log.info(f"charged order {order.id} for {amount_cents} cents via {provider.name} (attempt {attempt})")
    return charge_id
