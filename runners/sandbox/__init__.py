"""The sandbox every local run happens in: PR tests, probes, adversarials, agents and grading.

A run sees its work tree (read-write), the read-only environment it runs in, the asset
cache and a private HOME and TMPDIR, under resource limits; nothing else of the host:
not the registry, not the mirrors (which hold the future), not other runs, not the
service's secrets or processes. The command runner enters it through one function,
:func:`runners.sandbox.enter.sandboxed`; the rest of this package is what that function
is made of.
"""
