"""Which merged PRs become candidates: measuring a PR's files, the ordered filters, revert
detection, formatting-only detection, ranking and the auto-accept rule.
"""
