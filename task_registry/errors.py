"""Errors raised by registry queries; the CLI and API turn them into messages and 4xx answers."""

from __future__ import annotations

from probewatch.errors import RegistryError


class NotFound(RegistryError):
    def __init__(self, kind: str, key: object) -> None:
        super().__init__(f"no {kind} {key!s}")
        self.kind, self.key = kind, key


class AlreadyExists(RegistryError):
    def __init__(self, kind: str, key: object) -> None:
        super().__init__(f"{kind} {key!s} already exists")
        self.kind, self.key = kind, key


class InvalidTransition(RegistryError):
    def __init__(self, kind: str, key: object, current: str, wanted: str) -> None:
        super().__init__(f"{kind} {key!s} cannot go from {current} to {wanted}")
        self.current, self.wanted = current, wanted
