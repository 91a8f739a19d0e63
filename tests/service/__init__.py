"""Tests of the service area."""
