"""Where merged PRs come from: the source Protocol and registry, a local clone or mirror read with
``git log``, the GitHub REST API through PyGithub, and the commit-message styles of merged PRs.
"""
