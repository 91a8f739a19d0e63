from __future__ import annotations

import json
from pathlib import Path

import pytest

from runners.backends.serialize import (
    INLINE_SCHEME,
    SerializationError,
    decode_inline,
    encode_inline,
    is_secret_name,
    request_from_json,
    request_to_json,
    result_from_json,
    result_to_json,
    scrub_env,
    without_secrets,
)
from runners.types import (
    EnvironmentRef,
    EnvironmentSpec,
    Fault,
    FaultKind,
    Hardware,
    Outcome,
    PatchSpec,
    Resources,
    RunRequest,
    RunResult,
    TestCaseResult,
    TestOverlay,
    TestStatus,
)


def full_request() -> RunRequest:
    root = Path("/srv/probewatch/envs/abc123")
    return RunRequest(
        repo=Path("/srv/mirrors/verl"),
        base_commit="0123456789abcdef0123456789abcdef01234567",
        patches=(
            PatchSpec("golden", "diff --git a/x.py b/x.py\n+é unicode ✓\n"),
            PatchSpec("submission", "diff", allow_binary=True, forbid_test_changes=True),
        ),
        overlay=TestOverlay(
            replace_dirs=("tests/unit",),
            files={"tests/unit/test_a.py": "def test_a():\n    assert 1\n"},
            probes={"tests/probes/test_state.py": "def test_state(): ..."},
        ),
        tests=("tests/unit/test_a.py", "tests/probes/test_state.py::test_state"),
        environment=EnvironmentRef(
            "abc123",
            root,
            root / "bin" / "python",
            {"HF_HUB_OFFLINE": "1", "HF_TOKEN": "hf_x"},
            spec=EnvironmentSpec(("six==1.16.0", "pytest"), "2023-06-01T00:00:00Z", "3.11.7"),
        ),
        setup_commands=("pip install -e . --no-deps",),
        hardware=Hardware(gpus=8, gpu_type="H100"),
        timeout_per_test_s=None,
        timeout_run_s=1800.5,
        env={"OMP_NUM_THREADS": "4", "PROBEWATCH_GITHUB_TOKEN": "ghp_secret"},
        label="golden#2",
    )


def full_result() -> RunResult:
    tests = tuple(
        TestCaseResult(
            f"tests/test_x.py::test_{s.value}", s, 0.25, f"why {s.value}", s is TestStatus.failed
        )
        for s in TestStatus
    )
    return RunResult(
        outcome=Outcome.completed,
        tests=tests,
        resources=Resources(1.5, 0.75, 123_456_789, 80 * 1024**3, ("NVIDIA H100 80GB HBM3",)),
        fault=Fault(FaultKind.missing_asset, "Qwen/Qwen2-7B tokenizer not cached", retryable=False),
        detail="d",
        log="tail of output",
        attempts=2,
    )


def test_request_round_trips_every_field_except_secrets() -> None:
    request = full_request()
    back = request_from_json(request_to_json(request))
    assert back == without_secrets(request)
    assert back.patches == request.patches
    assert back.overlay == request.overlay
    assert back.hardware == Hardware(8, "H100")
    assert back.timeout_per_test_s is None
    assert isinstance(back.repo, Path) and isinstance(back.environment.python, Path)
    assert back.env == {"OMP_NUM_THREADS": "4"}
    assert back.environment.env == {"HF_HUB_OFFLINE": "1"}


def test_minimal_request_round_trips_with_defaults() -> None:
    request = RunRequest(repo=Path("/r"), base_commit="abc")
    assert request_from_json(request_to_json(request)) == request


def test_result_round_trips_every_status_resources_and_fault() -> None:
    result = full_result()
    back = result_from_json(result_to_json(result))
    assert back == result
    assert [t.status for t in back.tests] == list(TestStatus)
    assert back.passed == frozenset({"tests/test_x.py::test_passed"})
    assert back.resources.gpu_names == ("NVIDIA H100 80GB HBM3",)


def test_serialized_request_carries_no_secret_value() -> None:
    text = request_to_json(full_request())
    assert "ghp_secret" not in text
    assert "hf_x" not in text


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("PROBEWATCH_GITHUB_TOKEN", True),
        ("GH_TOKEN", True),
        ("HF_TOKEN", True),
        ("PROBEWATCH_WEBHOOK_SECRET", True),
        ("PROBEWATCH_DATABASE_URL", True),
        ("PGPASSWORD", True),
        ("OPENAI_API_KEY", True),
        ("PROBEWATCH_GITHUB_APP_PRIVATE_KEY", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("GIT_AUTHOR_NAME", False),
        ("HF_HOME", False),
        ("CUDA_VISIBLE_DEVICES", False),
        ("PATH", False),
    ],
)
def test_secret_names_are_recognised(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_scrub_env_keeps_ordinary_variables() -> None:
    assert scrub_env({"A": "1", "gh_token": "x", "HF_HOME": "/c"}) == {"A": "1", "HF_HOME": "/c"}


def test_inline_payload_round_trips_and_is_compact() -> None:
    document = request_to_json(full_request()) * 20
    packed = encode_inline(document)
    assert packed.startswith(INLINE_SCHEME)
    assert packed.isascii()
    assert len(packed) < len(document) / 5
    assert decode_inline(packed) == document


def test_damaged_inline_payload_is_refused_with_a_reason() -> None:
    with pytest.raises(SerializationError, match="damaged"):
        decode_inline(INLINE_SCHEME + "not base64!!")
    with pytest.raises(SerializationError, match="starts with"):
        decode_inline("plain text")


def test_a_result_is_not_read_as_a_request() -> None:
    with pytest.raises(SerializationError, match=r"expected a probewatch\.run-request document"):
        request_from_json(result_to_json(full_result()))


def test_unknown_version_is_refused_naming_both_versions() -> None:
    envelope = json.loads(request_to_json(full_request()))
    envelope["version"] = 99
    with pytest.raises(SerializationError, match=r"version 99 is not supported.*version 1"):
        request_from_json(json.dumps(envelope))


def test_invalid_field_is_named() -> None:
    envelope = json.loads(result_to_json(full_result()))
    envelope["body"]["tests"][1]["status"] = "exploded"
    with pytest.raises(SerializationError, match=r"tests\.1\.status"):
        result_from_json(json.dumps(envelope))


def test_missing_field_is_named() -> None:
    envelope = json.loads(request_to_json(full_request()))
    del envelope["body"]["base_commit"]
    with pytest.raises(SerializationError, match="base_commit: Field required"):
        request_from_json(json.dumps(envelope))


def test_not_json_is_refused() -> None:
    with pytest.raises(SerializationError, match="not JSON"):
        result_from_json("{truncated")
