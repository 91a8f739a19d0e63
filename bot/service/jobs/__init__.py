"""Work-queue jobs: their kinds and typed payloads, the handlers, the worker that leases and runs
them, and the scheduler that polls watched repositories.
"""
