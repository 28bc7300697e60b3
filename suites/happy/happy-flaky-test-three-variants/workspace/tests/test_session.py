import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
from session import SESSION_TTL_S, is_expired  # noqa: E402


class Expiry(unittest.TestCase):
    def test_session_expiry(self):
        s = {"created_at": 1_700_000_000}
        self.assertFalse(is_expired(s, now=1_700_000_000 + SESSION_TTL_S))
        self.assertTrue(is_expired(s, now=1_700_000_000 + SESSION_TTL_S + 1))


if __name__ == "__main__":
    unittest.main()
