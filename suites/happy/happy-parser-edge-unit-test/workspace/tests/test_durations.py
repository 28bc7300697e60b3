import sys
import unittest

sys.path.insert(0, "src")
from durations import parse_duration  # noqa: E402


class ParseDurationTest(unittest.TestCase):
    def test_seconds(self):
        self.assertEqual(parse_duration("90s"), 90)

    def test_compound(self):
        self.assertEqual(parse_duration("1h30m"), 5400)

    def test_days(self):
        self.assertEqual(parse_duration("2d"), 172800)

    def test_unknown_unit_rejected(self):
        with self.assertRaises(ValueError):
            parse_duration("10x")


if __name__ == "__main__":
    unittest.main()
