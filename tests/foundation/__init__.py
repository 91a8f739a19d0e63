"""Tests of the foundation area."""
