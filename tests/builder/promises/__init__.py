"""Tests of the builder area."""
