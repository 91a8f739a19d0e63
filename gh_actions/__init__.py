"""GitHub Actions workflows and the composite action for self-hosted GPU runners.

The YAML files in this package are data: the runners' GitHub Actions backend
reads them from here and dispatches them on the watched (or a mirror) repo.
"""
