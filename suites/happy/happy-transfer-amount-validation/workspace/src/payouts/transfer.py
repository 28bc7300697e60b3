"""Payouts to connected accounts, sent to the bank API."""

MAX_TRANSFER_CENTS = 5_000_000  # $50,000: above it, treasury approves by hand
SUPPORTED_CURRENCIES = ("EUR", "GBP", "USD")


class InvalidTransfer(ValueError):
    """A transfer refused before it reaches the bank."""


def create_transfer(account_id, amount_cents, currency):
    """The transfer request the bank API takes."""
    return {"account": account_id, "amount": amount_cents, "currency": currency}
