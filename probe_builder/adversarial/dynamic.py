"""The dynamic equivalence check: a survivor whose function behaves like the golden one on
every input the PR's tests give it, and on edge inputs made from them, is likely equivalent.

Three kinds of run, all through the task's runner and environment, nothing edited in the
repository:

1. the golden patch runs the PR's tests that reach the survivors' lines once more, with
   a recorder (:mod:`probe_builder.adversarial.replay_recorder`, a probe file pytest
   imports first) that pickles the arguments of each survivor's function as the tests
   call it;
2. a replay probe (:mod:`probe_builder.adversarial.replay_probe`) calls those functions in
   the golden tree on the recorded inputs and on edge inputs (zero, negative, NaN, large,
   empty), and writes fingerprints of what comes back;
3. the same probe runs in each survivor's tree and compares, and in the pre-change tree:
   a replay that cannot tell the golden function from the pre-change one (a new
   function, or a change whose effect goes where no fingerprint looks: a gradient, a
   transport, a global) cannot vouch for any survivor of it.

A survivor is set aside as *likely equivalent* only when its function was recorded at
least once, the replay sees the PR's own change of it, and every recorded and edge call
matched; a function the tests never call with picklable arguments, a line outside any
function, or a run that fails keeps the survivor. Set-aside survivors appear in the task's
coverage table with the reason, never in the maintainer's comment.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from probe_builder.adversarial import replay_probe, replay_recorder
from probe_builder.adversarial.mutants import RESULT_PRESERVING
from probe_builder.adversarial.survivors import (
    ControlJob,
    ControlRunner,
    SurvivorVerdict,
    TaskRunSpec,
    Variant,
)
from runners.execute import TreeRunner
from runners.types import PatchSpec
from task_registry.types import Control, Suite

RECORDER_FILE = "test_probewatch_record.py"
REPLAY_FILE = "test_probewatch_replay.py"
PRE_CHANGE = "pre-change"
# Operators whose effect is the path taken: a replay where the path never differs did not
# exercise them, whatever the outputs.
CONTROL_FLOW = frozenset(
    {"force_branch", "compare_flip", "bool_flip", "early_return", "bypass_cache"}
)


@dataclass(frozen=True)
class Replayed:
    """What the replay found for one survivor's function."""

    qualname: str
    recorded: int  # recorded inputs replayed
    compared: int  # recorded and edge inputs compared
    differs: tuple[str, ...]
    error: str = ""
    sees_the_change: bool = False  # the pre-change function differs from the golden one here
    diverged: tuple[str, ...] = ()  # calls where the mutant took another path than golden
    operator: str = ""

    @property
    def equivalent(self) -> bool:
        """Outputs alike everywhere, from a replay that can see the PR's change; and a mutant
        of the control flow must have taken another path somewhere: if it never acted on
        these inputs (a condition that never held), they say nothing of it."""
        acted = bool(self.diverged) or self.operator not in CONTROL_FLOW
        seen = self.recorded > 0 and self.sees_the_change
        return seen and acted and not self.differs and not self.error

    def reason(self) -> str:
        edges = self.compared - self.recorded
        return (
            f"likely equivalent: {self.qualname} gives the same result and leaves its "
            f"arguments the same as the golden code on {self.recorded} recorded input(s) "
            f"and {edges} edge input(s)"
        )


def likely_equivalent(
    spec: TaskRunSpec,
    survivors: Sequence[tuple[Variant, SurvivorVerdict]],
    runner: ControlRunner,
) -> dict[str, str]:
    """Survivors set aside as likely equivalent, by variant id, with the reason."""
    found = replay_survivors(spec, survivors, runner)
    return {variant: r.reason() for variant, r in found.items() if r.equivalent}


def replay_survivors(
    spec: TaskRunSpec,
    survivors: Sequence[tuple[Variant, SurvivorVerdict]],
    runner: ControlRunner,
) -> dict[str, Replayed]:
    """Record, replay and compare each survivor's function; by variant id. A mutant that
    breaks a resource or a mode (memory held, bytes sent twice, a function not compiled)
    gives the same results by design: a replay would call it equivalent, so it is not
    replayed."""
    placed = [
        (v, verdict)
        for v, verdict in survivors
        if v.path.endswith(".py") and v.line and v.operator not in RESULT_PRESERVING
    ]
    tests = sorted({t for _, verdict in placed for t in verdict.tests})
    if not placed or not tests or not isinstance(runner.backend, TreeRunner):
        return {}
    runner.workspace_root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="replay-", dir=runner.workspace_root))
    try:
        return _replay_in(folder, spec, placed, tests, runner)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _replay_in(
    folder: Path,
    spec: TaskRunSpec,
    placed: Sequence[tuple[Variant, SurvivorVerdict]],
    tests: Sequence[str],
    runner: ControlRunner,
) -> dict[str, Replayed]:
    inputs = folder / "inputs"
    inputs.mkdir()
    runner.run(_writing(folder, _recording(spec, [_key(v) for v, _ in placed], tests, inputs)))
    meta = _read(inputs / replay_recorder.FUNCTIONS_FILE)
    recorded = [v for v, _ in placed if meta.get(_key(v), {}).get("calls")]
    if not recorded:
        return {}
    runner.run(_writing(folder, _replay(spec, spec.golden(), inputs, None)))
    if not (inputs / replay_probe.GOLDEN_FILE).is_file():
        return {}
    verdicts = {v.id: folder / f"verdict-{index}.json" for index, v in enumerate(recorded)}
    base = folder / "verdict-base.json"
    jobs = [
        _writing(folder, _replay(spec, None, inputs, base, PRE_CHANGE)),
        *(
            _writing(
                folder,
                _replay(
                    spec,
                    PatchSpec(f"adversarial-{v.id}", v.patch, allow_binary=True),
                    inputs,
                    verdicts[v.id],
                    v.id,
                ),
            )
            for v in recorded
        ),
    ]
    runner.run_all(jobs)
    seen_change = _read(base)
    found = {}
    for variant in recorded:
        said = _read(verdicts[variant.id]).get(_key(variant))
        if said is not None:
            found[variant.id] = Replayed(
                qualname=meta[_key(variant)]["qualname"],
                recorded=int(said["recorded"]),
                compared=int(said["compared"]),
                differs=tuple(said["differs"]),
                error=str(said["error"]),
                sees_the_change=_sees_the_change(seen_change.get(_key(variant))),
                diverged=tuple(said.get("diverged", ())),
                operator=variant.operator,
            )
    return found


def _sees_the_change(said: dict[str, Any] | None) -> bool:
    """Whether the replay tells the golden function from the pre-change one on the same
    inputs: if it cannot see the PR's own change (the function is new, or what it changes
    goes where no fingerprint looks — a gradient, a transport, a global), a mutant's
    silence proves nothing."""
    return said is not None and not said.get("error") and bool(said.get("differs"))


def _writing(folder: Path, job: ControlJob) -> ControlJob:
    """``job`` allowed to write ``folder``: runs are sandboxed, and it is the one host folder
    the recorder and the replay write into and read back from."""
    return replace(job, request=replace(job.request, outputs=(folder,)))


def _key(variant: Variant) -> str:
    return f"{variant.path}:{variant.line}"


def _read(path: Path) -> dict[str, dict[str, Any]]:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _recording(
    spec: TaskRunSpec, keys: Sequence[str], tests: Sequence[str], out: Path
) -> ControlJob:
    targets = [[path, int(line)] for path, _, line in (k.rpartition(":") for k in keys)]
    env: Mapping[str, str] = {
        replay_recorder.TARGETS_ENV: json.dumps(targets),
        replay_recorder.OUT_ENV: str(out),
    }
    source = Path(replay_recorder.__file__).read_text(encoding="utf-8")
    request = spec.request(
        [spec.golden()],
        label="record-inputs",
        probes={RECORDER_FILE: source},
        tests=(RECORDER_FILE, *tests),  # first: imported before the PR's test modules
        env=env,
    )
    return ControlJob(Control.golden, Suite.probes, request, attempt=0)


def _replay(
    spec: TaskRunSpec,
    patch: PatchSpec | None,
    inputs: Path,
    verdict: Path | None,
    variant: str | None = None,
) -> ControlJob:
    """The replay probe in the golden tree (``verdict`` None: it writes the fingerprints),
    in the pre-change tree (``patch`` None) or in a survivor's (it compares and writes
    ``verdict``)."""
    mode = "golden" if verdict is None else "mutant"
    env = {replay_probe.IN_ENV: str(inputs), replay_probe.MODE_ENV: mode}
    if verdict is not None:
        env[replay_probe.VERDICT_ENV] = str(verdict)
    source = Path(replay_probe.__file__).read_text(encoding="utf-8")
    label = f"replay-{variant or mode}"
    patches = [patch] if patch is not None else []
    request = spec.request(
        patches, label=label, probes={REPLAY_FILE: source}, tests=(REPLAY_FILE,), env=env
    )
    if variant is None:
        return ControlJob(Control.golden, Suite.probes, request, attempt=0)
    if patch is None:
        return ControlJob(Control.snapshot, Suite.probes, request)
    return ControlJob(Control.adversarial, Suite.probes, request, adversarial=variant)
