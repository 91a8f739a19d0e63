"""Tests of the envs area."""
