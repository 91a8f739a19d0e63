"""The maintainer report: the coverage table of a PR's task rendered as Markdown for the sticky
comment and the dashboard, and stored on the PR's one report row.
"""
