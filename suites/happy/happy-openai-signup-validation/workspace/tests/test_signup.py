import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
from signup import signup  # noqa: E402


class Users:
    def __init__(self):
        self.rows = []

    def exists(self, email):
        return email in self.rows

    def create(self, email, name):
        self.rows.append(email)
        return email


class Signup(unittest.TestCase):
    def test_valid(self):
        self.assertEqual(signup({"email": "ana@example.org"}, Users()), "ana@example.org")

    def test_rejects_malformed(self):
        for bad in ["", "ana", "ana@", "@example.org", "ana@example", "a b@example.org"]:
            with self.assertRaises(ValueError, msg=bad):
                signup({"email": bad}, Users())


if __name__ == "__main__":
    unittest.main()
