"""Controls that a probe must reject: the hollow patch, mechanical mutants of the golden patch,
and the search for the mutants that survive the PR's own tests.
"""
