"""Authors: the registry, the mechanical author, and the OpenAI-compatible author over real HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pydantic import SecretStr

from probe_builder.authors.base import (
    AUTHORS,
    Author,
    AuthorError,
    AuthorExchange,
    AuthorPurpose,
    AuthorRequest,
    AuthorResponseError,
    MechanicalAuthor,
    UnknownAuthorError,
    create_author,
)
from probe_builder.authors.openai_compat import OpenAIAuthorConfig
from probe_builder.material.contract import Contract
from task_registry.types import PatchSource, PromiseCategory
from tests.probe_builder_support import cache_pr


class StubEndpoint:
    """A chat-completions endpoint on 127.0.0.1 that answers from a queue and keeps requests."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, str]] = []
        self.requests: list[tuple[dict, dict]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append((dict(self.headers), body))
                status, text = stub.answers.pop(0)
                payload = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self, content: object, status: int = 200) -> None:
        text = content if isinstance(content, str) else json.dumps(content)
        completion = {
            "choices": [{"message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7},
        }
        self.answers.append((status, json.dumps(completion) if status == 200 else text))


@pytest.fixture
def endpoint() -> Iterator[StubEndpoint]:
    stub = StubEndpoint()
    stub.thread.start()
    try:
        yield stub
    finally:
        stub.server.shutdown()
        stub.server.server_close()


@pytest.fixture
def request_(tmp_path) -> AuthorRequest:
    pr = cache_pr(tmp_path)
    return AuthorRequest(
        instance_id="o__r-1",
        title="counting cache",
        description="Add a cache.",
        golden_files=pr.split.golden_files,
        test_patch=pr.split.test,
        promises=(),
        contract=Contract(),
        base=pr.base_tree,
        head=pr.head_tree,
        statement="# statement",
    )


def _author(endpoint: StubEndpoint, exchanges: list[AuthorExchange]) -> Author:
    config = OpenAIAuthorConfig(
        base_url=endpoint.base_url, model="local-model", api_key=SecretStr("sk-test")
    )
    return create_author("openai", config=config, recorder=exchanges.append)


def test_registry_knows_mechanical_and_openai_and_refuses_others():
    assert AUTHORS.names() == ["mechanical", "openai"]
    assert isinstance(create_author(), MechanicalAuthor)
    with pytest.raises(
        UnknownAuthorError, match=r"no author named .gpt. .known: mechanical, openai"
    ):
        create_author("gpt")


def test_mechanical_author_proposes_the_mutants_and_no_probes(request_):
    author = create_author("mechanical")
    assert isinstance(author, Author)
    patches = author.propose_adversarials(request_)
    assert patches and all(
        p.source is PatchSource.mechanical and p.patch.startswith("diff --git") for p in patches
    )
    assert author.propose_probes(request_) == []
    assert author.word_statement(request_) == "# statement"


def test_openai_author_posts_a_chat_completion_and_records_the_exchange(endpoint, request_):
    golden = request_.golden_files[1].text
    endpoint.answer(
        {
            "patches": [
                {"promise_category": "numeric", "description": "sum, not mean", "diff": golden}
            ]
        }
    )
    exchanges: list[AuthorExchange] = []
    (patch,) = _author(endpoint, exchanges).propose_adversarials(request_)
    assert (patch.source, patch.promise_category, patch.patch) == (
        PatchSource.llm,
        PromiseCategory.numeric,
        golden,
    )
    headers, body = endpoint.requests[0]
    assert headers["Authorization"] == "Bearer sk-test"
    assert body["model"] == "local-model" and body["messages"][0]["role"] == "system"
    assert "adversarial patches" in body["messages"][1]["content"]
    (exchange,) = exchanges
    assert (exchange.purpose, exchange.status_code, exchange.error, exchange.prompt_tokens) == (
        AuthorPurpose.adversarials,
        200,
        None,
        11,
    )
    assert json.loads(exchange.request) == body and "sk-test" not in exchange.request
    assert (
        exchange.endpoint == endpoint.base_url + "/chat/completions"
        and exchange.instance_id == "o__r-1"
    )


def test_openai_author_validates_probes_and_statement(endpoint, request_):
    endpoint.answer(
        "```json\n"
        + json.dumps(
            {
                "probes": [
                    {
                        "path": "tests/probes/test_reset.py",
                        "promise_category": "state",
                        "content": "def test_x():\n    assert True\n",
                    }
                ]
            }
        )
        + "\n```"
    )
    endpoint.answer({"statement": "# better statement"})
    exchanges: list[AuthorExchange] = []
    author = _author(endpoint, exchanges)
    (probe,) = author.propose_probes(request_)
    assert (
        probe.path == "tests/probes/test_reset.py"
        and probe.promise_category is PromiseCategory.state
    )
    assert author.word_statement(request_) == "# better statement"
    assert [e.purpose for e in exchanges] == [AuthorPurpose.probes, AuthorPurpose.statement]


@pytest.mark.parametrize(
    ("purpose", "answer", "message"),
    [
        (
            "adversarials",
            {
                "patches": [
                    {
                        "diff": "diff --git a/other.py b/other.py\n--- a/other.py\n+++ b/other.py\n@@ -1 +1 @@\n-a\n+b\n"
                    }
                ]
            },
            "outside the golden patch",
        ),
        ("adversarials", {"patches": [{"diff": "not a diff"}]}, "not a git unified diff"),
        (
            "probes",
            {"probes": [{"path": "../evil/test_x.py", "content": "x = 1\n"}]},
            "not a relative test_",
        ),
        (
            "probes",
            {"probes": [{"path": "tests/test_x.py", "content": "def (:\n"}]},
            "does not compile",
        ),
        ("probes", {"answer": "none"}, "no list of objects under 'probes'"),
        ("statement", "I cannot help with that.", "not a JSON object"),
    ],
)
def test_malformed_answers_are_refused_with_the_reason_and_still_recorded(
    endpoint, request_, purpose, answer, message
):
    endpoint.answer(answer)
    exchanges: list[AuthorExchange] = []
    author = _author(endpoint, exchanges)
    call = {
        "adversarials": author.propose_adversarials,
        "probes": author.propose_probes,
        "statement": author.word_statement,
    }[purpose]
    with pytest.raises(AuthorResponseError, match=message):
        call(request_)
    assert len(exchanges) == 1 and exchanges[0].response is not None


def test_http_errors_and_unreachable_endpoints_are_recorded_then_raised(endpoint, request_):
    endpoint.answer("overloaded", status=503)
    exchanges: list[AuthorExchange] = []
    with pytest.raises(AuthorError, match="HTTP 503"):
        _author(endpoint, exchanges).propose_probes(request_)
    assert (exchanges[0].status_code, exchanges[0].error) == (
        503,
        "http://"
        + endpoint.base_url.split("//")[1]
        + "/chat/completions answered HTTP 503: overloaded",
    )
    config = OpenAIAuthorConfig(base_url="http://127.0.0.1:9/v1", model="m", timeout_s=2)
    dead: list[AuthorExchange] = []
    with pytest.raises(AuthorError, match="ConnectError"):
        create_author("openai", config=config, recorder=dead.append).word_statement(request_)
    assert dead[0].status_code is None and dead[0].error.startswith("ConnectError")


def test_openai_author_proposes_promises_quoted_verbatim_and_drops_the_rest(endpoint, request_):
    endpoint.answer(
        {
            "promises": [
                {"category": "state", "quote": "Add  a\ncache."},  # whitespace differs only
                {"category": "resource.memory", "quote": "halves peak memory"},  # not in the PR
                {"category": "speed", "quote": "Add a cache."},  # no such category
                {"category": "functional"},
            ]
        }
    )
    exchanges: list[AuthorExchange] = []
    (promise,) = _author(endpoint, exchanges).propose_promises(request_)
    assert (promise.category, promise.quote) == (PromiseCategory.state, "Add  a\ncache.")
    assert [e.purpose for e in exchanges] == [AuthorPurpose.promises]
    assert "verbatim" in endpoint.requests[0][1]["messages"][1]["content"]
    assert create_author("mechanical").propose_promises(request_) == []
