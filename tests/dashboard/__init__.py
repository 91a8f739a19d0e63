"""Tests of the dashboard pages."""
