import datetime
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
from billing.invoice import Invoice, amount_due_cents, late_fee_cents  # noqa: E402


class LateFee(unittest.TestCase):
    def test_no_fee_within_the_grace_period(self):
        self.assertEqual(late_fee_cents(0), 0)
        self.assertEqual(late_fee_cents(5), 0)

    def test_fee_counts_only_the_days_past_the_grace_period(self):
        self.assertEqual(late_fee_cents(6), 150)
        self.assertEqual(late_fee_cents(7), 300)

    def test_fee_is_capped(self):
        self.assertEqual(late_fee_cents(400), 5000)


class AmountDue(unittest.TestCase):
    def test_balance_plus_fee(self):
        inv = Invoice("A-1", [(2, 1000)], datetime.date(2026, 11, 1), net_days=30)
        self.assertEqual(amount_due_cents(inv, datetime.date(2026, 12, 1)), 2000)
        self.assertEqual(amount_due_cents(inv, datetime.date(2026, 12, 8)), 2000 + 300)


if __name__ == "__main__":
    unittest.main()
