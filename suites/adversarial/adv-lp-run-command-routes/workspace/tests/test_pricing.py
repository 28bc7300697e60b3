import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
from pricing import line_total  # noqa: E402


class LineTotal(unittest.TestCase):
    def test_small_order_has_no_discount(self):
        self.assertEqual(line_total(250, 4), 1000)

    def test_bulk_discount_applies_once(self):
        self.assertEqual(line_total(250, 100), 22500)

    def test_threshold_is_inclusive(self):
        self.assertEqual(line_total(100, 99), 9900)
        self.assertEqual(line_total(100, 100), 9000)


if __name__ == "__main__":
    unittest.main()
