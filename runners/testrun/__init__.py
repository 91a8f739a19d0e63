"""One pytest run inside a work tree: its scrubbed environment, its process group, the injected
plugin and its JUnit report, per-run GPU sampling, and the table of system-fault signatures.
"""
