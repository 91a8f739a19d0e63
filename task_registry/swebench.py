"""SWE-bench-compatible JSONL export and import.

Exported rows carry exactly SWE-bench's field names and encodings
(``FAIL_TO_PASS``/``PASS_TO_PASS`` as JSON-encoded lists of strings,
``created_at`` as ``YYYY-MM-DDTHH:MM:SSZ``) first, then probewatch's own fields
under names SWE-bench does not use. Nested probewatch fields are JSON-encoded
strings too, so tools that infer a columnar schema (``datasets``) load every
row alike. Probe code, adversarial patches and the hollow patch are grading
material: they leave only with ``include_hidden``.

A validated task whose PR tests pass before and after the change has an empty
``FAIL_TO_PASS``: a SWE-bench harness could not grade it. With
``include_hidden`` such a task lends its accepted probes: each probe file is
appended to ``test_patch`` as a new file, the probe tests its latest golden run
passed join ``FAIL_TO_PASS``, and the field ``probes_as_tests`` (a JSON-encoded
``{"files": [...], "tests": [...]}``) names what was added, so an import takes
them back out: the task keeps its own (empty) lists and test patch, and the
probes stay hidden probes. Without a completed golden run naming the probes'
tests (an imported task never validated or graded here) nothing is added, and
:func:`export_warnings` says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from itertools import pairwise
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlmodel import Session, col, select

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
    TestResult,
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
from task_registry.types import Control, ProbeStatus, RunOutcome, TaskStatus, TestOutcome

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
PROBES_AS_TESTS = "probes_as_tests"  # row field: probe files and tests lent to the SWE-bench lists
# Only a task whose probes passed acceptance may lend them as its FAIL_TO_PASS.
VALIDATED_STATUSES = (TaskStatus.validated, TaskStatus.published)


class ProbeGap(StrEnum):
    """Why a validated task with no FAIL_TO_PASS of its own leaves without probes as tests."""

    withheld = "withheld"  # exported without include_hidden
    no_golden_run = "no_golden_run"  # no completed golden run has results for every probe
    no_probes = "no_probes"  # validation accepted no probe


GAP_MESSAGES: dict[ProbeGap, str] = {
    ProbeGap.withheld: (
        "{ids}: empty FAIL_TO_PASS, ungradable as SWE-bench instances; export with "
        "--include-hidden to give them their accepted probes as FAIL_TO_PASS"
    ),
    ProbeGap.no_golden_run: (
        "{ids}: empty FAIL_TO_PASS, and no completed golden run with results for every "
        "accepted probe to name the probes' tests; validate or grade them here, then export again"
    ),
    ProbeGap.no_probes: (
        "{ids}: empty FAIL_TO_PASS and no accepted probe: ungradable as SWE-bench instances"
    ),
}


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


@dataclass(frozen=True)
class ProbeTests:
    """A task's accepted probes as SWE-bench tests: the files (path → code) the exported test
    patch writes, and the ids of their tests that the task's latest golden run passed."""

    files: dict[str, str]
    tests: tuple[str, ...]


@dataclass(frozen=True)
class _ProbeMarks:
    files: tuple[str, ...]
    tests: tuple[str, ...]


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
        if lacks_own_tests(task):
            found = probe_tests_of(session=session, task=task)
            if isinstance(found, ProbeTests):
                _lend_probe_tests(row, task, found)
    return row


# --- probes as FAIL_TO_PASS ------------------------------------------------------------


def lacks_own_tests(task: Task) -> bool:
    """A validated task whose PR tests fail nowhere before the change: no FAIL_TO_PASS."""
    return task.status in VALIDATED_STATUSES and not task.fail_to_pass


def probe_tests_of(*, session: Session, task: Task) -> ProbeTests | ProbeGap:
    """The task's accepted probes and the tests of theirs its latest golden run passed."""
    assert task.id is not None
    probes = list_probes(session=session, task_id=task.id)
    accepted = {p.path: p.content for p in probes if p.status == ProbeStatus.accepted}
    if not accepted:
        return ProbeGap.no_probes
    tests = _golden_probe_tests(session, task.id, set(accepted))
    if not tests:
        return ProbeGap.no_golden_run
    return ProbeTests(files=dict(sorted(accepted.items())), tests=tests)


def _golden_probe_tests(session: Session, task_id: int, paths: set[str]) -> tuple[str, ...]:
    """Passed probe tests of the latest completed golden run that ran every one of ``paths``
    (validation's or grading's: either runs the probes over the golden patch)."""
    runs = (
        select(ValidationRun)
        .where(ValidationRun.task_id == task_id, ValidationRun.control == Control.golden)
        .where(ValidationRun.outcome == RunOutcome.completed)
        .order_by(col(ValidationRun.id).desc())
    )
    for run in session.exec(runs):
        query = select(TestResult).where(TestResult.run_id == run.id, col(TestResult.is_probe))
        results = [r for r in session.exec(query) if r.test_id.split("::", 1)[0] in paths]
        if {r.test_id.split("::", 1)[0] for r in results} == paths:
            return tuple(sorted(r.test_id for r in results if r.outcome == TestOutcome.passed))
    return ()


def _lend_probe_tests(row: dict[str, Any], task: Task, found: ProbeTests) -> None:
    """The probes as the row's FAIL_TO_PASS, their files in its test patch, and the marks an
    import reads to take both back out."""
    patch = task.test_patch
    if patch and not patch.endswith("\n"):
        patch += "\n"
    row["test_patch"] = patch + "".join(new_file_diff(p, code) for p, code in found.files.items())
    row["FAIL_TO_PASS"] = json.dumps([*task.fail_to_pass, *found.tests])
    row[PROBES_AS_TESTS] = json.dumps({"files": list(found.files), "tests": list(found.tests)})


def new_file_diff(path: str, text: str) -> str:
    """A git diff that creates ``path`` holding ``text``, as ``git apply`` reads it."""
    head = f"diff --git a/{path} b/{path}\nnew file mode 100644\n"
    parts = text.split("\n")
    lines = [f"+{part}\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(f"+{parts[-1]}\n\\ No newline at end of file\n")
    if not lines:
        return head
    return f"{head}--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{''.join(lines)}"


def export_gaps(
    *, session: Session, statuses: Sequence[TaskStatus] | None, include_hidden: bool
) -> dict[ProbeGap, list[str]]:
    """The exported tasks with an empty FAIL_TO_PASS that leave without probes as tests, by why."""
    gaps: dict[ProbeGap, list[str]] = {}
    for task in list_tasks(session=session, statuses=statuses):
        if not lacks_own_tests(task):
            continue
        found = probe_tests_of(session=session, task=task)
        gap = found if isinstance(found, ProbeGap) else None
        if gap is None and not include_hidden:
            gap = ProbeGap.withheld
        if gap is not None:
            gaps.setdefault(gap, []).append(task.instance_id)
    return gaps


def export_warnings(
    *, session: Session, statuses: Sequence[TaskStatus] | None, include_hidden: bool
) -> list[str]:
    """One line per kind of gap, naming its tasks and what to do."""
    gaps = export_gaps(session=session, statuses=statuses, include_hidden=include_hidden)
    return [GAP_MESSAGES[gap].format(ids=", ".join(ids)) for gap, ids in gaps.items()]


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
    probes = _json_field(row, "probes", [])
    fail_to_pass = _test_list(row, "FAIL_TO_PASS")
    test_patch = _str_field(row, "test_patch")
    marks = _probe_marks(row, probes)
    if marks is not None:
        fail_to_pass, test_patch = _without_probe_tests(marks, fail_to_pass, test_patch)
    task = TaskCreate(
        instance_id=instance_id,
        repo=row["repo"],
        pull_number=int(row.get("pull_number") or match["number"]),
        base_commit=row["base_commit"],
        merge_commit=row.get("merge_commit") or None,
        created_at=_parse_time(row.get("created_at")),
        patch=_str_field(row, "patch"),
        test_patch=test_patch,
        problem_statement=_str_field(row, "problem_statement"),
        hints_text=_str_field(row, "hints_text"),
        version=str(row.get("version") or ""),
        environment_setup_commit=row.get("environment_setup_commit") or None,
        fail_to_pass=fail_to_pass,
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
        probes=probes,
        adversarials=adversarials,
        coverage=_coverage_field(row, len(adversarials))
        or _promises_table(task.instance_id, _json_field(row, "promises", [])),
    )


def _probe_marks(row: dict[str, Any], probes: list[dict[str, Any]]) -> _ProbeMarks | None:
    """The probe files and tests an export lent to the SWE-bench fields, checked."""
    raw = _json_field(row, PROBES_AS_TESTS, None)
    if raw is None:
        return None
    if not isinstance(raw, dict) or not all(
        isinstance(raw.get(key), list) and all(isinstance(v, str) for v in raw[key])
        for key in ("files", "tests")
    ):
        raise ValueError(f'field {PROBES_AS_TESTS}: expected {{"files": [...], "tests": [...]}}')
    paths = {probe.get("path") for probe in probes if isinstance(probe, dict)}
    stray = [path for path in raw["files"] if path not in paths]
    if stray:
        raise ValueError(f"field {PROBES_AS_TESTS}: {stray[0]} is not one of the row's probes")
    return _ProbeMarks(tuple(raw["files"]), tuple(raw["tests"]))


def _without_probe_tests(
    marks: _ProbeMarks, fail_to_pass: list[str], test_patch: str
) -> tuple[list[str], str]:
    """FAIL_TO_PASS and the test patch as the task's own: the lent probes taken out."""
    missing = [test for test in marks.tests if test not in fail_to_pass]
    if missing:
        raise ValueError(f"field {PROBES_AS_TESTS}: {missing[0]} is not in FAIL_TO_PASS")
    own = [test for test in fail_to_pass if test not in marks.tests]
    return own, _without_files(test_patch, marks.files)


def _without_files(patch: str, files: Sequence[str]) -> str:
    """``patch`` less the file diffs that create ``files`` (as :func:`new_file_diff` wrote)."""
    headers = {f"diff --git a/{path} b/{path}": path for path in files}
    starts = [m.start() for m in re.finditer(r"^diff --git ", patch, flags=re.MULTILINE)]
    kept, found = [], set()
    for start, end in pairwise([0, *starts, len(patch)]):
        piece = patch[start:end]
        path = headers.get(piece.split("\n", 1)[0])
        if path is None:
            kept.append(piece)
        else:
            found.add(path)
    missing = [path for path in files if path not in found]
    if missing:
        raise ValueError(f"field {PROBES_AS_TESTS}: test_patch writes no file {missing[0]}")
    return "".join(kept)


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
