"""Builders of registry records for tests: small, realistic, deterministic."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlmodel import Session

from task_registry.models import (
    AdversarialPatchCreate,
    ProbeCreate,
    PromiseCreate,
    Task,
    TaskCreate,
)
from task_registry.swebench import instance_id_for
from task_registry.tasks import add_adversarial, add_probe, add_promise, create_task
from task_registry.types import PatchSource, ProbeStatus, TaskStatus

GOLDEN = """diff --git a/pkg/sync.py b/pkg/sync.py
--- a/pkg/sync.py
+++ b/pkg/sync.py
@@ -1,3 +1,6 @@
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
    session: Session, number: int, *, repo: str = "acme/infra-lib", **fields: object
) -> Task:
    """A built task with two promises, one accepted probe and one surviving adversarial."""
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
        status=TaskStatus.built,
        **fields,  # type: ignore[arg-type]
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
            promise_category="resource.traffic",
            description="if c: → if True: sends every parameter",
            patch=GOLDEN.replace("if value.version != _sent.get(name):", "if True:"),
        ),
    )
    adversarial.survives_original = True
    adversarial.rejected_by = [probe.id]  # type: ignore[list-item]
    task.coverage = {"promises": [{"category": "resource.traffic", "probes": [probe.path]}]}
    session.add_all([probe, adversarial, task])
    session.flush()
    return task
