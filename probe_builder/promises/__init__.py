"""Judgement on what a PR promised: promises extracted from its title and description, the
assertion profile of its test diff, and the per-promise verdict on its own tests.
"""
