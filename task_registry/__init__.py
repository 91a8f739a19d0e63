"""The registry of repos, candidates, tasks, probes, runs, submissions and scores (SQLModel)."""
