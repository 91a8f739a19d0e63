"""SWE-bench-compatible JSONL export and import.

Exported rows carry exactly SWE-bench's field names and encodings
(``FAIL_TO_PASS``/``PASS_TO_PASS`` as JSON-encoded lists of strings,
``created_at`` as ``YYYY-MM-DDTHH:MM:SSZ``) first, then probewatch's own fields
under names SWE-bench does not use. Nested probewatch fields are JSON-encoded
strings too, so tools that infer a columnar schema (``datasets``) load every
row alike. Probe code, adversarial patches and the hollow patch are grading
material: they leave only with ``include_hidden``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlmodel import Session, select

from probewatch.errors import RegistryError
from task_registry.coverage import CoverageTable, PromiseCoverage, stored_coverage
from task_registry.models import (
    AdversarialPatch,
    AdversarialPatchCreate,
    Probe,
    ProbeCreate,
    Promise,
    PromiseCreate,
    Submission,
    Task,
    TaskCreate,
    ValidationRun,
)
from task_registry.tasks import (
    add_adversarial,
    add_probe,
    add_promise,
    create_task,
    find_task,
    list_adversarials,
    list_probes,
    list_promises,
    list_tasks,
)
from task_registry.types import ProbeStatus, TaskStatus

SWEBENCH_FIELDS = (
    "repo",
    "instance_id",
    "base_commit",
    "patch",
    "test_patch",
    "problem_statement",
    "hints_text",
    "created_at",
    "version",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
    "environment_setup_commit",
)
FORMAT_VERSION = 1
INSTANCE_ID = re.compile(r"^(?P<owner>[^_/]+(?:_[^_/]+)*)__(?P<name>.+)-(?P<number>\d+)$")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


class ImportError_(RegistryError):
    """A JSONL file that cannot be imported; names the file, line and field."""

    def __init__(self, path: Path | str, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")


class OnConflict(StrEnum):
    fail = "fail"
    skip = "skip"
    replace_existing = "replace"  # not "replace": that would shadow str.replace


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def instance_id_for(repo: str, number: int) -> str:
    """``owner/name`` and PR 12 → ``owner__name-12``, as SWE-bench names instances."""
    return f"{repo.replace('/', '__')}-{number}"


# --- export --------------------------------------------------------------------------


def export_rows(
    *,
    session: Session,
    statuses: Sequence[TaskStatus] | None = None,
    include_hidden: bool = False,
) -> Iterator[dict[str, Any]]:
    for task in list_tasks(session=session, statuses=statuses):
        yield task_to_row(session=session, task=task, include_hidden=include_hidden)


def write_jsonl(rows: Iterable[dict[str, Any]], path: Path) -> int:
    """Write rows to ``path`` atomically (a temporary file renamed into place)."""
    tmp = path.with_name(f".{path.name}.tmp")
    count = 0
    with tmp.open("w", encoding="utf-8", newline="\n") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    tmp.replace(path)
    return count


def task_to_row(*, session: Session, task: Task, include_hidden: bool) -> dict[str, Any]:
    assert task.id is not None
    promises = list_promises(session=session, task_id=task.id)
    probes = list_probes(session=session, task_id=task.id)
    row: dict[str, Any] = {
        "repo": task.repo,
        "instance_id": task.instance_id,
        "base_commit": task.base_commit,
        "patch": task.patch,
        "test_patch": task.test_patch,
        "problem_statement": task.problem_statement,
        "hints_text": task.hints_text,
        "created_at": task.created_at.astimezone(UTC).strftime(TIME_FORMAT),
        "version": task.version,
        "FAIL_TO_PASS": json.dumps(list(task.fail_to_pass)),
        "PASS_TO_PASS": json.dumps(list(task.pass_to_pass)),
        "environment_setup_commit": task.environment_setup_commit or task.base_commit,
        "probewatch_format": FORMAT_VERSION,
        "pull_number": task.pull_number,
        "merge_commit": task.merge_commit or "",
        "task_status": str(task.status),
        "areas": json.dumps(list(task.areas)),
        "environment": json.dumps(
            {"lock_hash": task.lock_hash, "gpus": task.gpus, "gpu_type": task.gpu_type},
            sort_keys=True,
        ),
        "contract": json.dumps(task.contract, sort_keys=True, ensure_ascii=False),
        "promises": json.dumps([_promise_dict(p) for p in promises], ensure_ascii=False),
        "probes": json.dumps(
            [_probe_dict(p, promises, include_hidden) for p in probes], ensure_ascii=False
        ),
    }
    if include_hidden:
        adversarials = list_adversarials(session=session, task_id=task.id)
        row["hollow_patch"] = task.hollow_patch
        row["adversarial_patches"] = json.dumps(
            [_adversarial_dict(a, probes) for a in adversarials], ensure_ascii=False
        )
        row["coverage"] = _portable_coverage(task, adversarials)
    return row


def _portable_coverage(task: Task, adversarials: Sequence[AdversarialPatch]) -> str:
    """The stored table with each adversarial named by its place in ``adversarial_patches``:
    registry ids mean nothing in another registry."""
    places = {str(row.id): str(index) for index, row in enumerate(adversarials)}
    table = stored_coverage(task).with_adversarial_ids(places)
    return json.dumps(table.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)


def _promise_dict(promise: Promise) -> dict[str, Any]:
    return {
        "category": promise.category,
        "quote": promise.quote,
        "quantity": promise.quantity,
        "verdict": promise.verdict,
    }


def _probe_dict(probe: Probe, promises: list[Promise], include_hidden: bool) -> dict[str, Any]:
    ids = [p.id for p in promises]
    out: dict[str, Any] = {
        "path": probe.path,
        "promise_index": ids.index(probe.promise_id) if probe.promise_id in ids else None,
        "markers": list(probe.markers),
        "status": str(probe.status),
        "author": probe.author,
    }
    if include_hidden:
        out["content"] = probe.content
    return out


def _adversarial_dict(patch: AdversarialPatch, probes: list[Probe]) -> dict[str, Any]:
    paths = {p.id: p.path for p in probes}
    return {
        "source": str(patch.source),
        "operator": patch.operator,
        "file": patch.file,
        "line": patch.line,
        "promise_category": patch.promise_category,
        "description": patch.description,
        "patch": patch.patch,
        "survives_original": patch.survives_original,
        "rejected_by": sorted(paths[i] for i in patch.rejected_by if i in paths),
    }


# --- import --------------------------------------------------------------------------


@dataclass
class _Parsed:
    task: TaskCreate
    promises: list[dict[str, Any]]
    probes: list[dict[str, Any]]
    adversarials: list[dict[str, Any]]
    coverage: CoverageTable


def import_jsonl(
    *, session: Session, path: Path, on_conflict: OnConflict = OnConflict.fail
) -> ImportReport:
    """Read a SWE-bench JSONL file; every line is checked before anything is stored."""
    parsed = list(_parse_file(path))
    report = ImportReport()
    for line_no, item in parsed:
        existing = find_task(session=session, instance_id=item.task.instance_id)
        if existing is not None:
            if on_conflict is OnConflict.fail:
                raise ImportError_(path, line_no, f"task {item.task.instance_id} already exists")
            if on_conflict is OnConflict.skip:
                report.skipped.append(item.task.instance_id)
                continue
            _delete_for_replace(session, existing, path, line_no)
            report.replaced.append(item.task.instance_id)
        else:
            report.created.append(item.task.instance_id)
        _store(session, item)
    return report


def _parse_file(path: Path) -> Iterator[tuple[int, _Parsed]]:
    seen: dict[str, int] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise ImportError_(path, 0, "no such file") from None
    except UnicodeDecodeError as exc:
        raise ImportError_(path, 0, f"not UTF-8 text ({exc.reason})") from None
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = _parse_row(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ImportError_(path, line_no, f"not JSON ({exc.msg})") from None
        except (ValueError, TypeError, KeyError) as exc:
            raise ImportError_(path, line_no, str(exc).strip("'\"")) from None
        first = seen.setdefault(item.task.instance_id, line_no)
        if first != line_no:
            raise ImportError_(path, line_no, f"{item.task.instance_id} repeats line {first}")
        yield line_no, item


def _parse_row(row: Any) -> _Parsed:
    if not isinstance(row, dict):
        raise ValueError("a row must be a JSON object")
    for name in ("instance_id", "repo", "base_commit"):
        if not isinstance(row.get(name), str) or not row[name]:
            raise ValueError(f"field {name}: missing or not a string")
    instance_id = row["instance_id"]
    match = INSTANCE_ID.match(instance_id)
    if match is None:
        raise ValueError(f"field instance_id: {instance_id!r} is not OWNER__REPO-NUMBER")
    env = _json_field(row, "environment", {})
    task = TaskCreate(
        instance_id=instance_id,
        repo=row["repo"],
        pull_number=int(row.get("pull_number") or match["number"]),
        base_commit=row["base_commit"],
        merge_commit=row.get("merge_commit") or None,
        created_at=_parse_time(row.get("created_at")),
        patch=_str_field(row, "patch"),
        test_patch=_str_field(row, "test_patch"),
        problem_statement=_str_field(row, "problem_statement"),
        hints_text=_str_field(row, "hints_text"),
        version=str(row.get("version") or ""),
        environment_setup_commit=row.get("environment_setup_commit") or None,
        fail_to_pass=_test_list(row, "FAIL_TO_PASS"),
        pass_to_pass=_test_list(row, "PASS_TO_PASS"),
        contract=_json_field(row, "contract", {}),
        hollow_patch=_str_field(row, "hollow_patch"),
        lock_hash=env.get("lock_hash"),
        gpus=int(env.get("gpus") or 0),
        gpu_type=env.get("gpu_type"),
        areas=_json_field(row, "areas", []),
        status=TaskStatus(row.get("task_status") or TaskStatus.candidate),
    )
    adversarials = _json_field(row, "adversarial_patches", [])
    return _Parsed(
        task=task,
        promises=_json_field(row, "promises", []),
        probes=_json_field(row, "probes", []),
        adversarials=adversarials,
        coverage=_coverage_field(row, len(adversarials))
        or _promises_table(task.instance_id, _json_field(row, "promises", [])),
    )


def _promises_table(instance_id: str, promises: list[dict[str, Any]]) -> CoverageTable:
    """A row without hidden material says only the promises and their verdicts."""
    return CoverageTable(
        instance_id=instance_id,
        promises=[
            PromiseCoverage(
                position=index,
                category=promise["category"],
                quote=promise["quote"],
                quantity=promise.get("quantity"),
                verdict=promise.get("verdict"),
            )
            for index, promise in enumerate(promises)
        ],
    )


def _coverage_field(row: dict[str, Any], adversarials: int) -> CoverageTable | None:
    """The stored coverage table, checked against its model; its adversarials are named by
    their place in the row's ``adversarial_patches`` (the new rows' ids replace them)."""
    raw = _json_field(row, "coverage", None)
    if raw is None:
        return None
    try:
        table = CoverageTable.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"field coverage: {where}: {first['msg']}") from None
    places = sorted(a.id for a in table.adversarials)
    if places != sorted(str(index) for index in range(adversarials)):
        raise ValueError(
            f"field coverage: its adversarials must be named by their place in "
            f"adversarial_patches (0 to {adversarials - 1}), not {', '.join(places) or 'none'}"
        )
    return table


def _parse_time(value: Any) -> datetime:
    if not isinstance(value, str) or not value:
        raise ValueError("field created_at: missing")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"field created_at: {value!r} is not an ISO 8601 time") from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _str_field(row: dict[str, Any], name: str) -> str:
    value = row.get(name) or ""
    if not isinstance(value, str):
        raise ValueError(f"field {name}: expected a string, got {type(value).__name__}")
    return value


def _test_list(row: dict[str, Any], name: str) -> list[str]:
    """SWE-bench stores test lists as JSON strings; some copies hold plain lists."""
    value = row.get(name, "[]")
    if isinstance(value, str):
        try:
            value = json.loads(value or "[]")
        except json.JSONDecodeError:
            raise ValueError(f"field {name}: not a JSON-encoded list") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"field {name}: expected a list of test ids")
    return value


def _json_field(row: dict[str, Any], name: str, default: Any) -> Any:
    value = row.get(name)
    if value is None:
        return default
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            raise ValueError(f"field {name}: not valid JSON") from None
    return value


def _store(session: Session, item: _Parsed) -> None:
    task = create_task(session=session, task_in=item.task)
    assert task.id is not None
    promise_ids = [
        add_promise(
            session=session,
            promise_in=PromiseCreate(task_id=task.id, position=index, **promise),
        ).id
        for index, promise in enumerate(item.promises)
    ]
    probe_ids: dict[str, int] = {}
    for probe in item.probes:
        index = probe.get("promise_index")
        created = add_probe(
            session=session,
            probe_in=ProbeCreate(
                task_id=task.id,
                promise_id=promise_ids[index] if index is not None else None,
                path=probe["path"],
                content=probe.get("content", ""),
                markers=probe.get("markers", []),
                author=probe.get("author", "curator"),
            ),
        )
        created.status = ProbeStatus(probe.get("status", ProbeStatus.proposed))
        assert created.id is not None
        probe_ids[created.path] = created.id
    new_ids = []
    for adversarial in item.adversarials:
        fields = {
            k: v for k, v in adversarial.items() if k not in ("rejected_by", "survives_original")
        }
        row = add_adversarial(
            session=session, patch_in=AdversarialPatchCreate(task_id=task.id, **fields)
        )
        row.survives_original = adversarial.get("survives_original")
        row.rejected_by = [
            probe_ids[p] for p in adversarial.get("rejected_by", []) if p in probe_ids
        ]
        new_ids.append(str(row.id))
    places = {str(index): new for index, new in enumerate(new_ids)}
    table = item.coverage.with_adversarial_ids(places)
    task.coverage = table.model_dump(mode="json")
    session.add(task)
    session.flush()


def _delete_for_replace(session: Session, task: Task, path: Path, line_no: int) -> None:
    for model, what in ((ValidationRun, "validation runs"), (Submission, "submissions")):
        if session.exec(select(model).where(model.task_id == task.id)).first() is not None:
            raise ImportError_(
                path, line_no, f"task {task.instance_id} has {what}; retire it instead of replacing"
            )
    for child in (AdversarialPatch, Probe, Promise):
        for row in session.exec(select(child).where(child.task_id == task.id)):
            session.delete(row)
    session.flush()
    session.delete(task)
    session.flush()
