"""The ``openai`` author: any OpenAI-compatible chat-completions endpoint.

A local vLLM server works as well as a hosted API: base URL, model and key
come from the caller's settings. Each call is one ``POST
{base_url}/chat/completions`` asking for a JSON object; every exchange, the
failed ones included, goes to the :class:`~probe_builder.authors.base.ExchangeRecorder`
before this module returns or raises. Answers are validated: a patch must be
a git diff touching only files of the golden patch, a probe a compiling
Python test file under a relative path.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError

from probe_builder.authors.base import (
    AuthorError,
    AuthorExchange,
    AuthorPurpose,
    AuthorRequest,
    AuthorResponseError,
    ExchangeRecorder,
    ProposedPatch,
    ProposedProbe,
)
from probe_builder.material.diffs import DiffParseError, parse_diff
from probe_builder.promises.extract import ExtractedPromise
from task_registry.types import PatchSource, PromiseCategory

MAX_PATCH_CHARS = 60_000  # keeps a prompt inside an ordinary context window

SYSTEM_PROMPT = (
    "You help build a benchmark from a merged pull request of an AI-infrastructure repository. "
    "Answer with one JSON object and nothing else."
)
TASKS: dict[AuthorPurpose, str] = {
    AuthorPurpose.adversarials: (
        "Write adversarial patches: each is the golden patch changed so that it breaks exactly one "
        "of the promises while the PR's own tests still pass (for example, send every parameter "
        "instead of only the changed ones, sum instead of average, never invalidate the cache on "
        'reset). Answer {"patches": [{"promise_category": ..., "description": ..., "diff": '
        '"<a full unified git diff against the base commit>"}]}.'
    ),
    AuthorPurpose.probes: (
        "Write pytest probe files that pass on the golden patch and fail on the pre-change code, "
        "on a hollow patch whose new functions raise, and on patches that break one promise. "
        "Check the "
        "promised observable (memory, time, bytes, state across calls, graph modes). "
        'Answer {"probes": [{"path": "tests/probes/test_<name>.py", '
        '"promise_category": ..., "content": ...}]}.'
    ),
    AuthorPurpose.promises: (
        "List what this pull request promises, as its title and description state it: one "
        "behaviour each (the same behaviour restated is one promise), quoted as the shortest "
        "span copied verbatim from the title or the description. What the PR's tests, docs, "
        "benchmarks or renames do is not a promise, nor is a limitation. Categories: "
        "resource.memory, resource.time, resource.traffic, state (caches, reset, offload and "
        "reload, save and resume, weight sync), mode (CUDA graphs, torch.compile), numeric, "
        'functional. Answer {"promises": [{"category": ..., "quote": ...}]}.'
    ),
    AuthorPurpose.statement: (
        "Rewrite this task statement for clarity. Keep every module path, name, signature and flag "
        "exactly as written; do not add code, formulas, constants or tolerances. Answer "
        '{"statement": "<markdown>"}.'
    ),
}


class OpenAIAuthorConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    base_url: str  # e.g. http://127.0.0.1:8000/v1
    model: str
    api_key: SecretStr | None = None
    timeout_s: float = 300.0
    max_tokens: int = 8192
    temperature: float = 0.2


def _promise_lines(request: AuthorRequest) -> str:
    return (
        "\n".join(f"- [{p.category}] {p.quote}" for p in request.promises) or "- (none extracted)"
    )


def user_prompt(purpose: AuthorPurpose, request: AuthorRequest) -> str:
    golden = "".join(f.text for f in request.golden_files)[:MAX_PATCH_CHARS]
    parts = [
        TASKS[purpose],
        f"Pull request: {request.title}\n\n{request.description}",
        f"Promises:\n{_promise_lines(request)}",
        f"Golden patch:\n{golden}",
        f"Test patch:\n{request.test_patch[:MAX_PATCH_CHARS]}",
    ]
    if purpose is AuthorPurpose.statement:
        parts.append(f"Statement:\n{request.statement}")
    if request.feedback:
        parts.append(f"The previous round was rejected: {request.feedback}")
    return "\n\n".join(parts)


def _json_object(text: str) -> dict[str, Any]:
    fenced = re.search(r"```(?:json)?\s*(\{.*\})\s*```", text, flags=re.S)
    candidate = fenced.group(1) if fenced else text[text.find("{") : text.rfind("}") + 1]
    try:
        value = json.loads(candidate)
    except json.JSONDecodeError as exc:
        raise AuthorResponseError(f"the answer is not a JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise AuthorResponseError("the answer is JSON but not an object")
    return value


def _category(value: Any) -> PromiseCategory | None:
    try:
        return PromiseCategory(value)
    except ValueError:
        return None


@dataclass
class OpenAIAuthor:
    config: OpenAIAuthorConfig
    recorder: ExchangeRecorder
    client: httpx.Client | None = None
    name: str = "openai"

    @property
    def endpoint(self) -> str:
        return self.config.base_url.rstrip("/") + "/chat/completions"

    def _body(self, purpose: AuthorPurpose, request: AuthorRequest) -> dict[str, Any]:
        return {
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": user_prompt(purpose, request)},
            ],
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        }

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        headers = {}
        if self.config.api_key is not None:
            headers["Authorization"] = f"Bearer {self.config.api_key.get_secret_value()}"
        if self.client is not None:
            return self.client.post(
                self.endpoint, json=body, headers=headers, timeout=self.config.timeout_s
            )
        with httpx.Client() as client:
            return client.post(
                self.endpoint, json=body, headers=headers, timeout=self.config.timeout_s
            )

    def _record(
        self,
        purpose: AuthorPurpose,
        request: AuthorRequest,
        body: dict[str, Any],
        started: tuple[datetime, float],
        response: httpx.Response | None,
        error: str | None,
    ) -> None:
        usage: dict[str, Any] = {}
        if response is not None and response.headers.get("content-type", "").startswith(
            "application/json"
        ):
            try:
                usage = response.json().get("usage") or {}
            except (json.JSONDecodeError, AttributeError):
                usage = {}
        self.recorder(
            AuthorExchange(
                author=self.name,
                purpose=purpose,
                instance_id=request.instance_id,
                round=request.round,
                endpoint=self.endpoint,
                model=self.config.model,
                request=json.dumps(body),
                response=None if response is None else response.text,
                status_code=None if response is None else response.status_code,
                error=error,
                started_at=started[0],
                duration_s=time.monotonic() - started[1],
                prompt_tokens=usage.get("prompt_tokens"),
                completion_tokens=usage.get("completion_tokens"),
            )
        )

    def ask(self, purpose: AuthorPurpose, request: AuthorRequest) -> dict[str, Any]:
        """One exchange: the answer's JSON object, recorded whatever happens."""
        body = self._body(purpose, request)
        started = (datetime.now(UTC), time.monotonic())
        try:
            response = self._post(body)
        except httpx.HTTPError as exc:
            self._record(purpose, request, body, started, None, f"{type(exc).__name__}: {exc}")
            raise AuthorError(f"{self.endpoint}: {type(exc).__name__}: {exc}") from None
        try:
            if response.status_code != 200:
                raise AuthorError(
                    f"{self.endpoint} answered HTTP {response.status_code}: {response.text[:200]}"
                )
            content = response.json()["choices"][0]["message"]["content"]
            answer = _json_object(content or "")
        except (AuthorError, KeyError, IndexError, TypeError, json.JSONDecodeError) as exc:
            error = (
                exc
                if isinstance(exc, AuthorError)
                else AuthorResponseError(f"not a chat completion: {exc!r}")
            )
            self._record(purpose, request, body, started, response, str(error))
            raise error from None
        self._record(purpose, request, body, started, response, None)
        return answer

    def propose_adversarials(self, request: AuthorRequest) -> list[ProposedPatch]:
        answer = self.ask(AuthorPurpose.adversarials, request)
        golden_paths = {f.path for f in request.golden_files}
        return [_patch(item, golden_paths) for item in _items(answer, "patches")]

    def propose_probes(self, request: AuthorRequest) -> list[ProposedProbe]:
        answer = self.ask(AuthorPurpose.probes, request)
        return [_probe(item) for item in _items(answer, "probes")]

    def propose_promises(self, request: AuthorRequest) -> list[ExtractedPromise]:
        """The model's promises whose quote the title or description holds verbatim (up to
        whitespace) and whose category is known; an invented quote is dropped."""
        answer = self.ask(AuthorPurpose.promises, request)
        source = " ".join(f"{request.title}\n{request.description}".split())
        found = []
        for item in _items(answer, "promises"):
            category, quote = _category(item.get("category")), item.get("quote")
            if category is None or not isinstance(quote, str) or not quote.strip():
                continue
            if " ".join(quote.split()) in source:
                found.append(ExtractedPromise(category=category, quote=quote.strip()))
        return found

    def word_statement(self, request: AuthorRequest) -> str:
        statement = self.ask(AuthorPurpose.statement, request).get("statement")
        if not isinstance(statement, str) or not statement.strip():
            raise AuthorResponseError("the answer has no 'statement' text")
        return statement


def _items(answer: dict[str, Any], key: str) -> list[dict[str, Any]]:
    items = answer.get(key)
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise AuthorResponseError(f"the answer has no list of objects under {key!r}")
    return items


class _PatchItem(BaseModel):
    diff: str
    description: str = ""
    promise_category: str | None = None


class _ProbeItem(BaseModel):
    path: str
    content: str
    promise_category: str | None = None
    rationale: str = ""


def _patch(item: dict[str, Any], golden_paths: set[str]) -> ProposedPatch:
    try:
        parsed = _PatchItem.model_validate(item)
        files = parse_diff(parsed.diff)
    except (ValidationError, DiffParseError) as exc:
        raise AuthorResponseError(f"adversarial patch: {exc}") from None
    foreign = sorted({f.path for f in files} - golden_paths)
    if not files or foreign:
        raise AuthorResponseError(
            f"adversarial patch touches files outside the golden patch: {foreign or 'none'}"
        )
    return ProposedPatch(
        PatchSource.llm, parsed.diff, _category(parsed.promise_category), parsed.description, "llm"
    )


def _probe(item: dict[str, Any]) -> ProposedProbe:
    try:
        parsed = _ProbeItem.model_validate(item)
    except ValidationError as exc:
        raise AuthorResponseError(f"probe: {exc}") from None
    path = PurePosixPath(parsed.path)
    if (
        path.is_absolute()
        or ".." in path.parts
        or path.suffix != ".py"
        or not path.name.startswith("test_")
    ):
        raise AuthorResponseError(f"probe path {parsed.path!r} is not a relative test_*.py path")
    try:
        compile(parsed.content, parsed.path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise AuthorResponseError(
            f"probe {parsed.path} does not compile: line {exc.lineno}: {exc.msg}"
        ) from None
    return ProposedProbe(
        parsed.path, parsed.content, _category(parsed.promise_category), parsed.rationale
    )
