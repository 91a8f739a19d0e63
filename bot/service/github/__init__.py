"""Talking to GitHub as the bot: clients per installation, posting the sticky comment and the
check run, webhook redelivery, and the maintainers' ``.github/probewatch.yml``.
"""
