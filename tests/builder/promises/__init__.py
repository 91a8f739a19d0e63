"""Tests of the promise extractor, the assertion profile and the verdicts."""
