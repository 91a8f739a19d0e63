"""Tests of the evaluation area."""
