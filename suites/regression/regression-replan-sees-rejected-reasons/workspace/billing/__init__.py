"""Invoicing and dunning (moved out of payments/ in 2026-11)."""
