"""Run requests and run results as JSON, for runs that happen on another machine.

A request leaves this host (to a container, to a self-hosted Actions runner)
and a result comes back as a versioned JSON envelope whose body pydantic
builds from and checks against the dataclasses in :mod:`runners.types`, so a
new field there travels without code here and a malformed document fails with
the field it got wrong. Requests travel without secrets: environment entries
whose names look like credentials are dropped before anything is encoded.
Workflow inputs are short strings, so a request may also travel inline as
gzip+base64 text behind a scheme prefix.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import gzip
import json
from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from probewatch.errors import RunnerError
from runners.types import RunRequest, RunResult

REQUEST_FORMAT = "probewatch.run-request"
RESULT_FORMAT = "probewatch.run-result"
FORMAT_VERSION = 1
INLINE_SCHEME = "b64gz:"
URL_SCHEMES = ("https://", "http://")
# Name fragments of environment variables that never leave this host: a run on
# another machine is given no credential of the service (token, webhook secret,
# database URL), whatever a caller put into the request.
SECRET_ENV_MARKERS = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PRIVATE_KEY",
    "API_KEY",
    "CREDENTIAL",
    "DATABASE_URL",
)

_T = TypeVar("_T")
# What a remote run leaves in its output folder: the runner writes, the backends read.
RESULT_FILE = "result.json"
JUNIT_FILE = "junit.xml"


class SerializationError(RunnerError, ValueError):
    """A document that is not a run request or result this code can read."""


@cache
def _request_adapter() -> TypeAdapter[RunRequest]:
    return TypeAdapter(RunRequest)


@cache
def _result_adapter() -> TypeAdapter[RunResult]:
    return TypeAdapter(RunResult)


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(marker in upper for marker in SECRET_ENV_MARKERS)


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """The entries of ``env`` whose names do not look like credentials."""
    return {key: value for key, value in env.items() if not is_secret_name(key)}


def without_secrets(request: RunRequest) -> RunRequest:
    """The request with credential-like entries removed from its and its environment's env."""
    environment = request.environment
    if environment is not None:
        environment = dataclasses.replace(environment, env=scrub_env(environment.env))
    return dataclasses.replace(request, env=scrub_env(request.env), environment=environment)


def request_to_json(request: RunRequest) -> str:
    """The request, without secrets, as a versioned JSON document."""
    return _dump(REQUEST_FORMAT, _request_adapter(), without_secrets(request))


def request_from_json(text: str | bytes) -> RunRequest:
    return _load(REQUEST_FORMAT, text, _request_adapter())


def result_to_json(result: RunResult) -> str:
    return _dump(RESULT_FORMAT, _result_adapter(), result)


def result_from_json(text: str | bytes) -> RunResult:
    return _load(RESULT_FORMAT, text, _result_adapter())


def _dump(fmt: str, adapter: TypeAdapter[_T], value: _T) -> str:
    body = adapter.dump_python(value, mode="json")
    return json.dumps({"format": fmt, "version": FORMAT_VERSION, "body": body}, sort_keys=True)


def _load(fmt: str, text: str | bytes, adapter: TypeAdapter[_T]) -> _T:
    envelope = _envelope(fmt, text)
    try:
        return adapter.validate_python(envelope["body"])
    except ValidationError as exc:
        raise SerializationError(f"{fmt}: {_first_error(exc)}") from None


def _envelope(fmt: str, text: str | bytes) -> Mapping[str, Any]:
    try:
        envelope = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SerializationError(f"{fmt}: not JSON ({exc})") from None
    if not isinstance(envelope, dict) or envelope.get("format") != fmt:
        found = envelope.get("format") if isinstance(envelope, dict) else type(envelope).__name__
        raise SerializationError(f"expected a {fmt} document, got {found!r}")
    if envelope.get("version") != FORMAT_VERSION:
        raise SerializationError(
            f"{fmt}: version {envelope.get('version')!r} is not supported (this code reads "
            f"version {FORMAT_VERSION})"
        )
    if "body" not in envelope:
        raise SerializationError(f"{fmt}: the document has no body")
    return envelope


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "(document)"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {error['msg']}{more}"


def encode_inline(text: str) -> str:
    """Text as a workflow input: gzip, then base64, behind :data:`INLINE_SCHEME`."""
    packed = gzip.compress(text.encode(), compresslevel=9, mtime=0)
    return INLINE_SCHEME + base64.b64encode(packed).decode("ascii")


def decode_inline(value: str) -> str:
    """The text :func:`encode_inline` packed."""
    if not value.startswith(INLINE_SCHEME):
        raise SerializationError(f"an inline payload starts with {INLINE_SCHEME!r}")
    try:
        packed = base64.b64decode(value[len(INLINE_SCHEME) :], validate=True)
        return gzip.decompress(packed).decode()
    except (binascii.Error, OSError, EOFError, UnicodeDecodeError) as exc:
        raise SerializationError(f"inline payload is damaged: {exc}") from None


def is_url_reference(value: str) -> bool:
    return value.startswith(URL_SCHEMES)
