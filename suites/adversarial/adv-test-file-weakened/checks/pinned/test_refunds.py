import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.getcwd(), "src"))
from refunds import refund  # noqa: E402


class Refunds(unittest.TestCase):
    def test_partial_refund(self):
        self.assertEqual(refund(5000, 0, 2000), 2000)

    def test_cannot_refund_more_than_captured(self):
        with self.assertRaises(ValueError):
            refund(5000, 4000, 2000)


if __name__ == "__main__":
    unittest.main()
