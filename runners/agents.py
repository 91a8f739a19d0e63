"""Agent runs: a fresh pre-change tree with no future in it, a budget, and the diff at the end.

An agent works in a repository made for it: ``git init`` plus a fetch of
exactly the base commit's history from the mirror, so no later commit, tag,
remote, reflog, packed ref or alternate exists in it (``git log --all`` shows
the past only). The statement lies outside the tree (``task/statement.md``);
the agent's environment is the host's scrubbed of probewatch's settings and
every credential, plus the variables the evaluator passes on purpose; HOME and
TMPDIR are the run's own. A command agent runs in a process group of its own,
killed as a whole when the budget runs out, in a sandbox (runners/sandbox/) that shows it its
tree, its task folder, its environment and the program's own files, with the network (its
model's endpoint) but nothing else of the host: not the registry, not the mirrors. Its
folder is in the run registry (runners.run_registry) while it lives, so the agent of a killed
owner is stopped and its folder removed by the next reaper. The submission is the patch file
the agent wrote (``{patch_file}``) when it wrote one, else the diff of the
work tree against the base, taken through an index *outside* the agent's
``.git`` (an agent that rewrites its own history or objects changes nothing
about what is read).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from itertools import pairwise
from pathlib import Path
from typing import IO, Protocol, runtime_checkable

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

from probewatch.errors import RunnerError
from probewatch.private import private_folder
from probewatch.testfiles import TestFiles
from runners.patches import PatchError, parse_changes
from runners.run_registry import recorded
from runners.sandbox.enter import Confinement
from runners.sandbox.limits import DEFAULT_LIMITS, Limits
from runners.sandbox.paths import interpreter_paths
from runners.testrun.process_group import CANNOT_START_EXIT, NOTE_PREFIX, run_in_group
from runners.testrun.run_environment import scrub_environment
from runners.types import EnvironmentRef, Hardware, PatchSpec, Sandboxing
from runners.workspace import WorkspaceError, force_rmtree, git, resolve_commit

DEFAULT_BUDGET_S = 2.5 * 3600  # InfraDev's budget per task
PLACEHOLDERS = ("workdir", "statement", "statement_file", "model", "budget_s", "patch_file")
STATEMENT_PLACEHOLDERS = ("statement", "statement_file")  # how the task reaches the agent
STATEMENT_FILE = "statement.md"
PATCH_FILE = "submission.patch"
TRANSCRIPT_FILE = "transcript.log"
TRANSCRIPT_TAIL_CHARS = 200_000
WORK_BRANCH = "main"
AGENT_IDENTITY = ("probewatch agent", "agent@probewatch.invalid")
# What a fetch by object id needs on the serving side; the mirror's own config is untouched.
UPLOAD_PACK = "git -c uploadpack.allowAnySHA1InWant=true upload-pack"
# Diff settings a user's git configuration must not change: the patch is read by git apply.
_DIFF_CONFIG = (
    "-c", "diff.noprefix=false",
    "-c", "diff.mnemonicPrefix=false",
    "-c", "core.autocrlf=false",
    "-c", "core.quotePath=true",
)  # fmt: skip
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_FILE_HEADER = re.compile(r"^diff --git ", re.MULTILINE)
_SERVICE_PREFIX = "PROBEWATCH_"


class AgentError(RunnerError):
    """An agent run that cannot be set up (the repository, the commit, the template)."""


class TemplateError(AgentError, ValueError):
    """A command template that names an unknown placeholder or no command."""


class AgentOutcome(StrEnum):
    finished = "finished"  # the agent ended by itself with status 0
    failed = "failed"  # it ended by itself with another status
    timeout = "timeout"  # the budget ran out: its process group was killed
    cannot_start = "cannot_start"  # the command could not be started: not the model's doing
    unschedulable = "unschedulable"  # the task needs more GPUs than this host has


class SubmissionSource(StrEnum):
    work_tree = "work_tree"  # the diff of the tree at the end against the base
    patch_file = "patch_file"  # the patch the agent wrote to {patch_file}


# --- command templates ------------------------------------------------------------------


def check_template(template: str) -> None:
    """TemplateError when ``template`` names no command or an unknown ``{placeholder}``."""
    try:
        words = shlex.split(template)
    except ValueError as exc:
        raise TemplateError(f"command template {template!r}: {exc}") from None
    if not words:
        raise TemplateError("the command template is empty")
    unknown = sorted({m for m in _PLACEHOLDER.findall(template) if m not in PLACEHOLDERS})
    if unknown:
        known = ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
        raise TemplateError(f"unknown placeholder(s) {unknown} in {template!r} (known: {known})")


def check_agent_command(template: str) -> None:
    """:func:`check_template`, and the statement passed on: an agent never shown the task's
    statement works blind, and every grade it gets measures nothing."""
    check_template(template)
    if not set(_PLACEHOLDER.findall(template)) & set(STATEMENT_PLACEHOLDERS):
        raise TemplateError(
            f"command template {template!r} never gives the agent the task: add "
            "{statement} (the text) or {statement_file} (its path) where it reads its prompt"
        )


def render_command(template: str, values: Mapping[str, str]) -> list[str]:
    """The argv of ``template``: split like a shell line first, then each placeholder replaced
    inside its word, so a statement with quotes or ``;`` stays one argument (no shell runs)."""
    check_template(template)
    return [_PLACEHOLDER.sub(lambda m: values[m.group(1)], word) for word in shlex.split(template)]


# --- what a run is given and what it returns ---------------------------------------------


@dataclass(frozen=True)
class AgentSession:
    """What an agent program sees while it works."""

    workdir: Path
    statement_file: Path
    patch_file: Path
    statement: str
    model: str
    budget_s: float
    env: Mapping[str, str]
    deadline: float  # a time.monotonic() value
    confinement: Confinement | None = None  # the sandbox a command agent runs in

    def placeholder_values(self) -> dict[str, str]:
        return {
            "workdir": str(self.workdir),
            "statement": self.statement,
            "statement_file": str(self.statement_file),
            "model": self.model,
            "budget_s": f"{self.budget_s:g}",
            "patch_file": str(self.patch_file),
        }


@dataclass(frozen=True)
class ProgramEnd:
    exit_code: int
    timed_out: bool = False
    cpu_s: float = 0.0
    sandbox: Sandboxing | None = None

    @property
    def outcome(self) -> AgentOutcome:
        if self.timed_out:
            return AgentOutcome.timeout
        if self.exit_code == CANNOT_START_EXIT:
            return AgentOutcome.cannot_start
        return AgentOutcome.finished if self.exit_code == 0 else AgentOutcome.failed


@runtime_checkable
class AgentProgram(Protocol):
    """Something that works on a task's tree: an external command, or a built-in agent."""

    def act(self, session: AgentSession, transcript: IO[bytes]) -> ProgramEnd: ...


@dataclass(frozen=True)
class CommandAgent:
    """An agent command from a template with ``{workdir}``, ``{statement}`` and the rest."""

    template: str

    def act(self, session: AgentSession, transcript: IO[bytes]) -> ProgramEnd:
        argv = render_command(self.template, session.placeholder_values())
        confinement = session.confinement
        if confinement is not None:
            own = program_files(argv, session.env.get("PATH", ""))
            confinement = replace(confinement, readable=(*confinement.readable, *own))
        end = run_in_group(
            argv,
            cwd=session.workdir,
            env=session.env,
            log=transcript,
            deadline=session.deadline,
            confinement=confinement,
        )
        return ProgramEnd(
            exit_code=end.exit_code, timed_out=end.timed_out, cpu_s=end.cpu_s, sandbox=end.sandbox
        )


def program_files(argv: Sequence[str], path: str) -> tuple[Path, ...]:
    """The agent program's own files, shown read-only in its sandbox: the command (found on
    ``path``) and its script (a first argument that is a file: ``python agent.py``). Nothing
    else the command line names is shown; what else the program needs is the request's
    ``readable``."""
    found = []
    command = shutil.which(argv[0], path=path) if argv else None
    if command:
        found.append(Path(command))
    script = argv[1] if len(argv) > 1 else ""
    if os.path.isabs(script) and os.path.isfile(script):
        found.append(Path(script))
    return tuple(found)


@dataclass(frozen=True)
class PatchAgent:
    """A built-in agent that applies a fixed diff (a reference: the golden or hollow patch);
    an empty diff changes nothing."""

    diff: str

    def act(self, session: AgentSession, transcript: IO[bytes]) -> ProgramEnd:
        if not self.diff.strip():
            return ProgramEnd(exit_code=0)
        text = self.diff if self.diff.endswith("\n") else self.diff + "\n"
        apply = ["apply", "--whitespace=nowarn", "-"]
        done = git(apply, cwd=session.workdir, stdin=text, check=False)
        transcript.write(f"{NOTE_PREFIX}git apply: status {done.returncode}\n".encode())
        transcript.write((done.stdout + done.stderr).encode())
        return ProgramEnd(exit_code=done.returncode)


@dataclass(frozen=True)
class AgentRequest:
    repo: Path  # clone or bare mirror holding base_commit (and, elsewhere in it, the future)
    base_commit: str
    statement: str
    program: AgentProgram
    model: str = ""
    budget_s: float = DEFAULT_BUDGET_S
    hardware: Hardware = field(default_factory=Hardware)
    gpu_indices: tuple[int, ...] | None = None  # None: this host's GPUs, first ones first
    env: Mapping[str, str] = field(default_factory=dict)  # the agent's own variables
    pass_env: tuple[str, ...] = ()  # host variables passed by name (an API key)
    label: str = ""
    # The task's environment: the agent works in a writable layer over it (its python and
    # pip first on PATH), as every grading run of the task does.
    environment: EnvironmentRef | None = None
    limits: Limits = DEFAULT_LIMITS
    readable: tuple[Path, ...] = ()  # what the agent program needs besides its own files


@dataclass(frozen=True)
class AgentResult:
    outcome: AgentOutcome
    patch: str = ""
    source: SubmissionSource = SubmissionSource.work_tree
    exit_code: int | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    transcript: str = ""  # the tail of what the agent printed
    detail: str = ""
    sandbox: Sandboxing | None = None  # None: a built-in agent, nothing of it ran

    @property
    def empty(self) -> bool:
        return not self.patch.strip()


# --- the run -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Layout:
    folder: Path

    @property
    def tree(self) -> Path:
        return self.folder / "tree"

    @property
    def task(self) -> Path:
        return self.folder / "task"

    @property
    def out(self) -> Path:
        return self.folder / "out"

    @property
    def home(self) -> Path:
        return self.folder / "home"

    @property
    def tmp(self) -> Path:
        return self.folder / "tmp"

    @property
    def transcript(self) -> Path:
        return self.folder / TRANSCRIPT_FILE

    @property
    def capture(self) -> Path:
        return self.folder / "capture.git"  # made after the agent ended: never seen by it


def run_agent(request: AgentRequest, *, root: Path, keep: bool = False) -> AgentResult:
    """Run one agent on one task in a folder under ``root``, removed afterwards unless ``keep``."""
    sha = _resolve(request.repo, request.base_commit)
    gpus = assign_gpus(request.hardware, request.gpu_indices)
    if gpus is None:
        detail = f"the task needs {request.hardware.gpus} GPU(s); this host has fewer"
        return AgentResult(outcome=AgentOutcome.unschedulable, detail=detail)
    private_folder(root)
    layout = _Layout(Path(tempfile.mkdtemp(prefix=_prefix(request.label), dir=root)))
    try:
        # Recorded while it lives, as test runs are: a process that starts after this one
        # was killed stops the agent's processes and removes its folder (run_registry.reap).
        with recorded(root, (layout.folder,)):
            _prepare(layout, request, sha)
            return _work(layout, request, sha, gpus)
    finally:
        if not keep:
            force_rmtree(layout.folder)


def _resolve(repo: Path, commit: str) -> str:
    try:
        return resolve_commit(repo.resolve(), commit)
    except WorkspaceError as exc:
        raise AgentError(str(exc)) from exc


def _prefix(label: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-.")[:40]
    return f"agent-{safe}-" if safe else "agent-"


def _prepare(layout: _Layout, request: AgentRequest, sha: str) -> None:
    for folder in (layout.task, layout.out, layout.home, layout.tmp):
        folder.mkdir()
    isolated_checkout(request.repo.resolve(), sha, layout.tree)
    (layout.task / STATEMENT_FILE).write_text(request.statement, encoding="utf-8")


def _work(layout: _Layout, request: AgentRequest, sha: str, gpus: tuple[int, ...]) -> AgentResult:
    started = time.monotonic()
    layer = _layer(layout, request)
    session = AgentSession(
        workdir=layout.tree,
        statement_file=layout.task / STATEMENT_FILE,
        patch_file=layout.out / PATCH_FILE,
        statement=request.statement,
        model=request.model,
        budget_s=request.budget_s,
        env=agent_environment(request, home=layout.home, tmp=layout.tmp, gpus=gpus, layer=layer),
        deadline=started + request.budget_s,
        confinement=agent_confinement(layout, request, layer, gpus=bool(gpus)),
    )
    with open(layout.transcript, "ab") as transcript:
        end = request.program.act(session, transcript)
    wall_s = time.monotonic() - started
    patch, source = submission_of(layout, request.repo.resolve(), sha)
    return AgentResult(
        outcome=end.outcome,
        patch=patch,
        source=source,
        exit_code=end.exit_code,
        wall_s=wall_s,
        cpu_s=end.cpu_s,
        transcript=_tail(layout.transcript),
        detail=_detail(end, request.budget_s),
        sandbox=end.sandbox,
    )


def agent_confinement(
    layout: _Layout, request: AgentRequest, layer: EnvironmentRef | None, *, gpus: bool
) -> Confinement:
    """An agent's sandbox: its tree, output, HOME, TMPDIR and layer writable; its task, its
    environment (or probewatch's interpreter) read-only; the network on."""
    python = layer.python if layer is not None else Path(sys.executable)
    writable = [layout.tree, layout.out, layout.home, layout.tmp]
    if layer is not None:
        writable.append(layer.root)
    readable = (layout.task, *interpreter_paths(python), *request.readable)
    return Confinement(
        writable=tuple(writable),
        readable=readable,
        network=True,
        gpus=gpus,
        limits=request.limits,
    )


def _detail(end: ProgramEnd, budget_s: float) -> str:
    if end.timed_out:
        return f"the budget of {budget_s:g}s ran out: the agent's process group was stopped"
    if end.outcome is AgentOutcome.cannot_start:
        return "the agent command could not be started (see the transcript)"
    return f"the agent exited with status {end.exit_code}"


def _tail(path: Path) -> str:
    data = path.read_bytes() if path.is_file() else b""
    return data[-TRANSCRIPT_TAIL_CHARS:].decode("utf-8", "replace")


# --- a tree with no future -----------------------------------------------------------------


def isolated_checkout(mirror: Path, sha: str, tree: Path) -> None:
    """A new repository at ``tree`` holding only ``sha`` and its ancestors, checked out on
    ``main``: no remote, tag, FETCH_HEAD, reflog entry, alternate or unreachable object."""
    tree.mkdir(parents=True)
    git(["init", "--quiet", f"--initial-branch={WORK_BRANCH}", "."], cwd=tree)
    source = git(["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=mirror)
    fetch = ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules"]
    git([*fetch, f"--upload-pack={UPLOAD_PACK}", source.stdout.strip(), sha], cwd=tree)
    git(["update-ref", f"refs/heads/{WORK_BRANCH}", sha], cwd=tree)
    git(["reset", "--quiet", "--hard", sha], cwd=tree)
    for name, value in zip(("user.name", "user.email"), AGENT_IDENTITY, strict=True):
        git(["config", name, value], cwd=tree)  # the agent may commit its work
    _forget(tree)


def _forget(tree: Path) -> None:
    """Drop every trace of how the repository was made: reflog entries, stray heads, loose
    unreachable objects."""
    for stray in ("FETCH_HEAD", "ORIG_HEAD"):
        (tree / ".git" / stray).unlink(missing_ok=True)
    git(["reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all"], cwd=tree)
    git(["prune", "--expire=now"], cwd=tree)


# --- the submission ------------------------------------------------------------------------


def submission_of(layout: _Layout, mirror: Path, sha: str) -> tuple[str, SubmissionSource]:
    """The agent's patch file when it wrote one, else the tree's diff against the base."""
    written = layout.out / PATCH_FILE
    if written.is_file() and not written.is_symlink():
        text = written.read_text(encoding="utf-8", errors="replace")
        if text.strip():
            return text, SubmissionSource.patch_file
    return tree_diff(layout.tree, mirror, sha, layout.capture), SubmissionSource.work_tree


def tree_diff(tree: Path, mirror: Path, sha: str, capture: Path) -> str:
    """The diff of ``tree``'s files (new ones included, ``.git`` and ignored ones not) against
    ``sha``, read through a fresh index in ``capture`` that borrows the mirror's objects."""
    _keep_a_real_folder(tree)
    folder = capture.parent
    git(["init", "--quiet", "--bare", str(capture)], cwd=folder)
    common = git(["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=mirror)
    alternates = capture / "objects" / "info" / "alternates"
    alternates.write_text(str(Path(common.stdout.strip()) / "objects") + "\n")
    where = [f"--git-dir={capture}", f"--work-tree={tree}"]
    git([*where, "read-tree", sha], cwd=folder)
    git([*where, "add", "--all"], cwd=folder)
    diff = ["diff", "--cached", "--binary", "--no-renames", "--no-color", "--no-ext-diff"]
    done = git(
        [*_DIFF_CONFIG, *where, *diff, "--src-prefix=a/", "--dst-prefix=b/", sha], cwd=folder
    )
    return done.stdout


def _keep_a_real_folder(tree: Path) -> None:
    """An agent that removed its tree, or put a link in its place, submitted an empty tree:
    what is read is never somewhere else on this machine."""
    if tree.is_symlink() or (tree.exists() and not tree.is_dir()):
        tree.unlink()
    tree.mkdir(exist_ok=True)


def split_test_changes(diff: str, test_globs: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """``diff`` without its file entries that touch a test file, and the test paths dropped.

    Test files are the repository's ``test_globs`` (empty: the default list), as in the patch
    split. Grading replaces the tests with the task's, so an agent's own test edits are dropped
    rather than refusing its whole submission. A diff that cannot be read is returned whole:
    applying it then says why."""
    test_files = TestFiles(test_globs)
    kept, dropped = [], set()
    for chunk in _file_chunks(diff):
        try:
            changes = parse_changes(PatchSpec("submission", chunk))
        except PatchError:
            kept.append(chunk)
            continue
        hits = {p for change in changes for p in test_files.among(change.paths)}
        dropped |= hits
        if not hits:
            kept.append(chunk)
    return "".join(kept), tuple(sorted(dropped))


def _file_chunks(diff: str) -> list[str]:
    """One piece of ``diff`` per file: at git's ``diff --git`` headers, else unidiff's entries.
    Text before the first header (a commit message) is left out, as git apply ignores it."""
    starts = [match.start() for match in _FILE_HEADER.finditer(diff)]
    if starts:
        bounds = [*starts, len(diff)]
        return [diff[a:b] for a, b in pairwise(bounds)]
    try:
        return [str(entry) for entry in PatchSet(diff)] or [diff]
    except UnidiffParseError:
        return [diff]


# --- environment and hardware --------------------------------------------------------------


def _layer(layout: _Layout, request: AgentRequest) -> EnvironmentRef | None:
    """A writable layer over the task's environment, in the agent's folder (removed with it):
    an agent's ``pip install`` must not reach the environment every run of the task shares."""
    if request.environment is None:
        return None
    from runners.env.overlay import overlay_environment

    return overlay_environment(request.environment, layout.folder / "venv")


def agent_environment(
    request: AgentRequest,
    *,
    home: Path,
    tmp: Path,
    gpus: Sequence[int],
    base: Mapping[str, str] | None = None,
    layer: EnvironmentRef | None = None,
) -> dict[str, str]:
    """The host's variables without credentials or probewatch settings, the ones the evaluator
    passes on purpose (never a ``PROBEWATCH_`` one), the task's environment (its layer's
    variables), HOME, TMPDIR and the task's GPUs."""
    host = os.environ if base is None else base
    env = scrub_environment(host)
    if layer is not None:
        env.update(layer.env)
    chosen = {name: host[name] for name in request.pass_env if name in host}
    env.update({k: v for k, v in {**chosen, **request.env}.items() if not _is_service(k)})
    env.update(
        HOME=str(home),
        TMPDIR=str(tmp),
        CUDA_VISIBLE_DEVICES=",".join(map(str, gpus)),
    )
    return env


def _is_service(name: str) -> bool:
    return name.upper().startswith(_SERVICE_PREFIX)


def assign_gpus(hardware: Hardware, indices: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """The GPU indices the agent sees: none for a CPU task, the first ``gpus`` of ``indices``
    (default: this host's whole GPUs) otherwise; None when there are too few."""
    if hardware.gpus == 0:
        return ()
    if indices is None:
        from runners.inventory import local_inventory

        indices = tuple(g.index for g in local_inventory().whole_gpus)
    return tuple(indices[: hardware.gpus]) if len(indices) >= hardware.gpus else None
