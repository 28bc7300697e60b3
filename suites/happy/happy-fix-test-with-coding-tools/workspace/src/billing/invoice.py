"""Invoices: totals, tax, due dates and late fees.

Amounts are integer cents throughout; nothing here uses floats for money.
"""
import datetime

GRACE_DAYS = 5
DAILY_LATE_FEE_CENTS = 150
LATE_FEE_CAP_CENTS = 5000


def subtotal_cents(lines):
    """Sum of quantity x unit price over the invoice lines."""
    return sum(qty * unit for qty, unit in lines)


def discount_cents(subtotal, percent):
    """A percentage discount on the subtotal, rounded to the cent."""
    return round(subtotal * percent / 100)


def tax_cents(amount, rate_percent):
    """Sales tax on an amount, rounded half up to the cent."""
    return (amount * rate_percent + 50) // 100


def format_cents(cents):
    """Render cents as dollars, e.g. 12345 -> '$123.45'."""
    sign = '-' if cents < 0 else ''
    cents = abs(cents)
    return f"{sign}${cents // 100}.{cents % 100:02d}"


def due_date(issued, net_days):
    """The due date of an invoice issued on `issued` with net terms."""
    return issued + datetime.timedelta(days=net_days)


def days_late(due, paid):
    """Whole days between the due date and the payment (0 if on time)."""
    return max(0, (paid - due).days)


class Invoice:
    """One invoice: its lines, terms and payments."""

    def __init__(self, number, lines, issued, net_days=30, tax_rate_percent=0):
        self.number = number
        self.lines = list(lines)
        self.issued = issued
        self.net_days = net_days
        self.tax_rate_percent = tax_rate_percent
        self.payments = []

    def add_payment(self, paid_on, cents):
        self.payments.append((paid_on, cents))

    def total_cents(self):
        base = subtotal_cents(self.lines)
        return base + tax_cents(base, self.tax_rate_percent)

    def paid_cents(self):
        return sum(c for _, c in self.payments)

    def balance_cents(self):
        return self.total_cents() - self.paid_cents()

    def due(self):
        return due_date(self.issued, self.net_days)

    def summary(self):
        return f"invoice {self.number}: {format_cents(self.total_cents())}, due {self.due().isoformat()}"


def reminder_text_1(invoice):
    """Reminder template 1 (the dunning sequence sends them in order)."""
    return f"Reminder 1: {invoice.summary()} is unpaid."


def reminder_text_2(invoice):
    """Reminder template 2 (the dunning sequence sends them in order)."""
    return f"Reminder 2: {invoice.summary()} is unpaid."


def reminder_text_3(invoice):
    """Reminder template 3 (the dunning sequence sends them in order)."""
    return f"Reminder 3: {invoice.summary()} is unpaid."


def reminder_text_4(invoice):
    """Reminder template 4 (the dunning sequence sends them in order)."""
    return f"Reminder 4: {invoice.summary()} is unpaid."


def reminder_text_5(invoice):
    """Reminder template 5 (the dunning sequence sends them in order)."""
    return f"Reminder 5: {invoice.summary()} is unpaid."


def reminder_text_6(invoice):
    """Reminder template 6 (the dunning sequence sends them in order)."""
    return f"Reminder 6: {invoice.summary()} is unpaid."


def reminder_text_7(invoice):
    """Reminder template 7 (the dunning sequence sends them in order)."""
    return f"Reminder 7: {invoice.summary()} is unpaid."


def reminder_text_8(invoice):
    """Reminder template 8 (the dunning sequence sends them in order)."""
    return f"Reminder 8: {invoice.summary()} is unpaid."


def late_fee_cents(days_late):
    """The late fee for a payment `days_late` days after the due date.

    Nothing during the grace period; after it, DAILY_LATE_FEE_CENTS for each
    day past the grace period, at most LATE_FEE_CAP_CENTS.
    """
    if days_late <= GRACE_DAYS:
        return 0
    fee = days_late * DAILY_LATE_FEE_CENTS
    return min(fee, LATE_FEE_CAP_CENTS)


def amount_due_cents(invoice, on):
    """What the customer owes on day `on`: the balance plus any late fee."""
    late = days_late(invoice.due(), on)
    return invoice.balance_cents() + late_fee_cents(late)
