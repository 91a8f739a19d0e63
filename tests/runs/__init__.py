"""Tests of the runs area."""
