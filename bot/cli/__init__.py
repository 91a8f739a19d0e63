"""The ``probewatch`` command line: one Typer sub-app per command group, composed in ``main``, with
one shared context and one place where errors become a line on stderr.
"""
