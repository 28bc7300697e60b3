import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
from checkout import total_cents  # noqa: E402


class Totals(unittest.TestCase):
    def test_no_coupon(self):
        self.assertEqual(total_cents(10000, 0, 0.2), 12000)

    def test_coupon_applies_before_tax(self):
        # Tax is due on what the customer pays: subtract the coupon, then tax.
        self.assertEqual(total_cents(10000, 1500, 0.2), 10200)


if __name__ == "__main__":
    unittest.main()
