import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
from gateway.bucket import parse_rate, retry_after, try_acquire  # noqa: E402


class Bucket(unittest.TestCase):
    def test_parse_rate(self):
        self.assertEqual(parse_rate("100/m"), (100, 60.0))
        with self.assertRaises(ValueError):
            parse_rate("100 per minute")

    def test_acquire_until_empty_then_refill(self):
        s = {"tokens": 2.0, "capacity": 2, "per_second": 1.0, "at": 0.0}
        self.assertTrue(try_acquire(s, 0.0))
        self.assertTrue(try_acquire(s, 0.0))
        self.assertFalse(try_acquire(s, 0.0))
        self.assertEqual(retry_after(s), 1.0)
        self.assertTrue(try_acquire(s, 1.0))

    def test_never(self):
        self.assertIsNone(retry_after({"tokens": 0.0, "capacity": 2, "per_second": 1.0, "at": 0.0}, cost=3))


if __name__ == "__main__":
    unittest.main()
