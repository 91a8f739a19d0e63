"""Tests of the benches: their tables, splits and intervals."""
