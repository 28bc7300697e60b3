import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
from payouts.transfer import create_transfer  # noqa: E402


class CreateTransfer(unittest.TestCase):
    def test_request_shape(self):
        self.assertEqual(create_transfer("acct_1", 1250, "EUR"), {"account": "acct_1", "amount": 1250, "currency": "EUR"})


if __name__ == "__main__":
    unittest.main()
