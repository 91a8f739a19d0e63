"""Tests of the kit area."""
