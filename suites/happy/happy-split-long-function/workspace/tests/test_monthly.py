import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
from reports.monthly import build_report  # noqa: E402

ROWS = [("2026-11-02", "storage", 120, 240), ("2026-11-02", "compute", 30, 1500),
        ("2026-11-17", "storage", 80, 160), ("2026-11-30", "egress", 5, 45)]


class Monthly(unittest.TestCase):
    def test_report(self):
        text = build_report("acme", ROWS)
        self.assertIn("Period: 2026-11-02 to 2026-11-30 (3 active days)", text)
        self.assertIn("  storage           200 units  $     4.00", text)
        self.assertIn("Total: $19.45", text)
        self.assertIn("Largest cost: compute", text)

    def test_empty(self):
        self.assertEqual(build_report("acme", []), "Usage report for acme\n\nNo usage this month.\n")

    def test_negative_usage_is_refused(self):
        with self.assertRaises(ValueError):
            build_report("acme", [("2026-11-02", "storage", -1, 0)])


if __name__ == "__main__":
    unittest.main()
