"""Discover merged large pull requests (GitHub API or a local git mirror), filter and rank them."""
