"""The long-running service: the FastAPI app (webhook, JSON API, dashboard pages), the job queue's
kinds, handlers, worker and scheduler, and everything that talks to GitHub.
"""
