"""Tests of the maintainer report and the check run."""
