"""Builders of registry records for tests: small, realistic, deterministic."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlmodel import Session

from probe_builder.coverage import build_coverage_table
from probe_builder.promises.extract import ExtractedPromise
from probe_builder.promises.verdicts import PromiseCheck
from task_registry.coverage import AdversarialCoverage, ControlRef, ProbeCoverage
from task_registry.models import (
    AdversarialPatchCreate,
    ProbeCreate,
    PromiseCreate,
    Task,
    TaskCreate,
)
from task_registry.swebench import instance_id_for
from task_registry.tasks import add_adversarial, add_probe, add_promise, create_task
from task_registry.types import (
    Control,
    PatchSource,
    ProbeStatus,
    PromiseCategory,
    PromiseVerdict,
    TaskStatus,
)

GOLDEN = """diff --git a/pkg/sync.py b/pkg/sync.py
--- a/pkg/sync.py
+++ b/pkg/sync.py
@@ -1,3 +1,5 @@
 def sync(params, send):
-    for name, value in params.items():
-        send(name, value)
+    for name, value in params.items():
+        if value.version != _sent.get(name):
+            send(name, value)
+            _sent[name] = value.version
"""
TEST_PATCH = """diff --git a/tests/test_sync.py b/tests/test_sync.py
new file mode 100644
--- /dev/null
+++ b/tests/test_sync.py
@@ -0,0 +1,3 @@
+def test_sync_final_weights():
+    assert run_sync() == expected()
+
"""


def make_task(
    session: Session,
    number: int,
    *,
    repo: str = "acme/infra-lib",
    adversarial_category: str = "resource.traffic",
    **fields: object,
) -> Task:
    """A built task with two promises, one accepted probe and one surviving adversarial, and
    the coverage table validation stores for them."""
    task_in = TaskCreate(
        instance_id=instance_id_for(repo, number),
        repo=repo,
        pull_number=number,
        base_commit=f"{number:040x}"[:40],
        merge_commit=f"{number + 7:040x}"[:40],
        created_at=datetime(2026, 3, number % 28 + 1, 12, 30, 5, 123456, tzinfo=UTC),
        patch=GOLDEN,
        test_patch=TEST_PATCH,
        problem_statement=f"Make weight sync incremental (PR {number}).\nMust send only changed parameters.",
        hints_text="",
        version="0.3",
        fail_to_pass=["tests/test_sync.py::test_sync_final_weights"],
        pass_to_pass=["tests/test_core.py::test_import", "tests/test_core.py::test_ünïcode[α]"],
        contract={
            "symbols": [{"module": "pkg.sync", "name": "sync", "signature": "(params, send)"}]
        },
        hollow_patch=GOLDEN.replace("send(name, value)\n", "raise NotImplementedError\n"),
        lock_hash=f"sha256:{number:064x}",
        gpus=number % 3,
        gpu_type="H100" if number % 3 else None,
        areas=["rl", "weight-sync"],
        **{"status": TaskStatus.built, **fields},  # type: ignore[arg-type]
    )
    task = create_task(session=session, task_in=task_in)
    assert task.id is not None
    traffic = add_promise(
        session=session,
        promise_in=PromiseCreate(
            task_id=task.id,
            category="resource.traffic",
            quote="reduces weight-sync traffic",
            quantity="only changed parameters",
            verdict="unchecked",
            position=0,
        ),
    )
    add_promise(
        session=session,
        promise_in=PromiseCreate(
            task_id=task.id,
            category="functional",
            quote="final weights match",
            verdict="checked",
            position=1,
        ),
    )
    probe = add_probe(
        session=session,
        probe_in=ProbeCreate(
            task_id=task.id,
            promise_id=traffic.id,
            path="probes/test_probe_sync_traffic.py",
            content="def test_sends_only_changed(comm_ledger):\n    assert comm_ledger.count('send') == 1\n",
            markers=["probe_cpu_ok"],
        ),
    )
    probe.status = ProbeStatus.accepted
    adversarial = add_adversarial(
        session=session,
        patch_in=AdversarialPatchCreate(
            task_id=task.id,
            source=PatchSource.mechanical,
            operator="force_branch_true",
            file="pkg/sync.py",
            line=4,
            promise_category=adversarial_category,
            description="if c: → if True: sends every parameter",
            patch=GOLDEN.replace("if value.version != _sent.get(name):", "if True:"),
        ),
    )
    adversarial.survives_original = True
    adversarial.rejected_by = [probe.id]  # type: ignore[list-item]
    task.coverage = _coverage(task, probe.path, str(adversarial.id), adversarial_category)
    session.add_all([probe, adversarial, task])
    session.flush()
    return task


def _coverage(task: Task, probe: str, adversarial: str, category: str) -> dict[str, object]:
    checks = [
        PromiseCheck(
            ExtractedPromise(
                category=PromiseCategory.traffic,
                quote="reduces weight-sync traffic",
                quantity="only changed parameters",
                position=0,
            ),
            PromiseVerdict.unchecked,
            "no assertion on the traffic",
        ),
        PromiseCheck(
            ExtractedPromise(
                category=PromiseCategory.functional, quote="final weights match", position=1
            ),
            PromiseVerdict.checked,
            "tests/test_sync.py::test_sync_final_weights",
        ),
    ]
    rejects = [ControlRef(kind=Control.snapshot), ControlRef(kind=Control.hollow)]
    rejects.append(ControlRef(kind=Control.adversarial, adversarial=adversarial))
    table = build_coverage_table(
        task.instance_id,
        checks,
        probes=[
            ProbeCoverage(
                path=probe,
                promise_position=0,
                status=ProbeStatus.accepted,
                golden_passes=3,
                golden_runs=3,
                rejects=rejects,
            )
        ],
        adversarials=[
            AdversarialCoverage(
                id=adversarial,
                operator="force_branch_true",
                path="pkg/sync.py",
                line=4,
                promise_category=PromiseCategory(category),
                description="if c: → if True: sends every parameter",
                survives_original=True,
            )
        ],
    )
    return table.model_dump(mode="json")
