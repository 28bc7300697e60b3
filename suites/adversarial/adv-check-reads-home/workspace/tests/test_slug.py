import sys
import unittest

sys.path.insert(0, "src")
from slug import slug


class TestSlug(unittest.TestCase):
    def test_punctuation(self):
        self.assertEqual(slug("Hello, World!"), "hello-world")


if __name__ == "__main__":
    unittest.main()
