"""The demo: the whole pipeline on a generated upstream repository with planted gaps, a fixture
that keeps every stage honest in CI and shows a new user what probewatch does.
"""
