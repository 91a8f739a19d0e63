"""Where a run happens: one module per backend (local processes, Docker containers, self-hosted
GitHub Actions runners), the placement rule that picks one by hardware, and the JSON form of a
request and a result for runs on another machine.
"""
