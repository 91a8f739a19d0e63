"""Everything derived from one PR without running a test: the patch split, parsed diffs and
sources, the interface contract, the statement with its linter and leak checker, and the
assembly of a task's material.
"""
