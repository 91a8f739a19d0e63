"""The application layer: CLI, web service, scheduler, reports and posting to GitHub."""
