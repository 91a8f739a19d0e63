"""Agent runs for real: a tree with no future, the statement outside it, the budget, the
environment, and the submission read from the tree (or the agent's patch file)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from runners.agents import (
    AgentOutcome,
    AgentRequest,
    CommandAgent,
    PatchAgent,
    SubmissionSource,
    TemplateError,
    agent_environment,
    assign_gpus,
    check_template,
    render_command,
    run_agent,
)
from runners.types import Hardware
from tests.harness_support import MemoRepo, make_memo_repo
from tests.runner_repos import git, pid_alive, processes_running

PY = sys.executable


@pytest.fixture(scope="module")
def memo(tmp_path_factory: pytest.TempPathFactory) -> MemoRepo:
    return make_memo_repo(tmp_path_factory.mktemp("upstream"))


def script(tmp_path: Path, body: str, name: str = "agent.py") -> str:
    path = tmp_path / name
    path.write_text("import json, os, subprocess, sys\n" + body)
    return f"{PY} {path}"


def request(memo: MemoRepo, command: str, **options: object) -> AgentRequest:
    return AgentRequest(
        repo=memo.mirror,
        base_commit=memo.base,
        statement='Add `Memo`; don\'t "quote" me; $HOME',
        program=CommandAgent(command),
        **options,  # type: ignore[arg-type]
    )


def last_json(transcript: str) -> dict:
    return json.loads(transcript.strip().splitlines()[-1])


LOOK_AROUND = """
def run(*args):
    done = subprocess.run(["git", *args], capture_output=True, text=True)
    return {"code": done.returncode, "out": done.stdout.split()}
git_dir = os.path.join(os.getcwd(), ".git")
print(json.dumps({
    "log_all": run("log", "--all", "--format=%H")["out"],
    "rev_list_all": run("rev-list", "--all")["out"],
    "refs": run("for-each-ref", "--format=%(refname)")["out"],
    "tags": run("tag")["out"],
    "remotes": run("remote")["out"],
    "fsck": run("fsck", "--unreachable", "--lost-found", "--no-progress")["out"],
    "reflog": run("reflog", "--all", "--format=%H")["out"],
    "merge": run("cat-file", "-p", sys.argv[1])["code"],
    "later": run("cat-file", "-t", sys.argv[2])["code"],
    "alternates": os.path.exists(os.path.join(git_dir, "objects", "info", "alternates")),
    "fetch_head": os.path.exists(os.path.join(git_dir, "FETCH_HEAD")),
    "packed_refs": open(os.path.join(git_dir, "packed-refs")).read()
        if os.path.exists(os.path.join(git_dir, "packed-refs")) else "",
    "config": open(os.path.join(git_dir, "config")).read(),
    "head": run("rev-parse", "HEAD")["out"],
    "status": run("status", "--porcelain")["out"],
}))
"""


def test_agent_tree_holds_the_base_commit_and_nothing_of_the_future(
    memo: MemoRepo, tmp_path: Path
) -> None:
    command = script(tmp_path, LOOK_AROUND) + f" {memo.merge} {memo.later}"
    result = run_agent(request(memo, command), root=tmp_path / "runs")
    seen = last_json(result.transcript)
    assert result.outcome is AgentOutcome.finished, result.transcript
    assert seen["head"] == [memo.base]
    assert seen["log_all"] == seen["rev_list_all"] == [memo.base]
    future = {memo.merge, memo.later, memo.side}
    assert not future & set(seen["log_all"] + seen["reflog"] + seen["fsck"])
    assert seen["merge"] != 0 and seen["later"] != 0  # the objects are not there at all
    assert seen["refs"] == ["refs/heads/main"]
    assert seen["tags"] == [] and seen["remotes"] == [] and seen["fsck"] == []
    assert not seen["alternates"] and not seen["fetch_head"]
    assert "v0.2" not in seen["packed_refs"] and "future-branch" not in seen["packed_refs"]
    assert "remote" not in seen["config"] and str(memo.mirror) not in seen["config"]
    assert seen["status"] == []  # a clean checkout of the base
    assert result.empty and result.source is SubmissionSource.work_tree


def test_the_statement_is_outside_the_tree_and_each_placeholder_stays_one_argument(
    memo: MemoRepo, tmp_path: Path
) -> None:
    body = "print(json.dumps({'argv': sys.argv[1:], 'cwd': os.getcwd()}))\n"
    command = script(tmp_path, body) + (
        " {workdir} {statement} {statement_file} {model} {budget_s} --out={patch_file}"
    )
    result = run_agent(
        request(memo, command, model="m-1", budget_s=60), root=tmp_path / "runs", keep=True
    )
    seen = last_json(result.transcript)
    workdir, statement, statement_file, model, budget, out = seen["argv"]
    assert seen["cwd"] == workdir
    assert statement == 'Add `Memo`; don\'t "quote" me; $HOME'
    assert Path(statement_file).read_text() == statement
    assert not Path(statement_file).is_relative_to(workdir)
    assert (model, budget) == ("m-1", "60")
    assert out.startswith("--out=") and not Path(out[6:]).is_relative_to(workdir)


def test_the_budget_stops_the_agent_and_its_children_and_keeps_the_work_so_far(
    memo: MemoRepo, tmp_path: Path
) -> None:
    body = (
        "open('cachelib/partial.py', 'w').write('DONE = 1\\n')\n"
        "child = subprocess.Popen(['sleep', '59.75'])\n"
        "print(json.dumps({'child': child.pid}), flush=True)\n"
        "child.wait()\n"
    )
    started = time.monotonic()
    result = run_agent(request(memo, script(tmp_path, body), budget_s=2), root=tmp_path / "runs")
    assert result.outcome is AgentOutcome.timeout
    assert time.monotonic() - started < 30
    assert "child" in last_json(result.transcript)  # its id is the sandbox's, not the host's
    assert not [pid for pid in processes_running("sleep 59.75") if pid_alive(pid)]
    assert "+DONE = 1" in result.patch and "b/cachelib/partial.py" in result.patch


def test_the_agent_sees_no_probewatch_setting_and_no_credential_unless_passed(
    memo: MemoRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROBEWATCH_ADMIN_TOKEN", "admin-secret")
    monkeypatch.setenv("PROBEWATCH_DATABASE_URL", "postgresql://u:pw@db/probewatch")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-agent")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-other")
    monkeypatch.setenv("PROBEWATCH_WEBHOOK_SECRET", "hook")
    body = "print(json.dumps(dict(os.environ)))\n"
    options = {"pass_env": ("OPENAI_API_KEY", "PROBEWATCH_WEBHOOK_SECRET"), "env": {"MODE": "x"}}
    result = run_agent(request(memo, script(tmp_path, body), **options), root=tmp_path / "runs")
    env = last_json(result.transcript)
    assert env["OPENAI_API_KEY"] == "sk-agent" and env["MODE"] == "x"
    assert not [k for k in env if k.startswith("PROBEWATCH_")]
    assert "GITHUB_TOKEN" not in env and "ANTHROPIC_API_KEY" not in env
    assert "admin-secret" not in json.dumps(env) and "u:pw@" not in json.dumps(env)
    assert env["CUDA_VISIBLE_DEVICES"] == ""
    assert Path(env["HOME"]).name == "home" and Path(env["TMPDIR"]).name == "tmp"


def test_an_evaluator_variable_never_reintroduces_a_probewatch_setting(tmp_path: Path) -> None:
    base = {"PATH": "/bin", "PROBEWATCH_GITHUB_TOKEN": "t", "HF_TOKEN": "h", "LANG": "C"}
    req = AgentRequest(
        repo=tmp_path,
        base_commit="x",
        statement="",
        program=PatchAgent(""),
        pass_env=("PROBEWATCH_GITHUB_TOKEN", "HF_TOKEN"),
        env={"PROBEWATCH_HOME": "/elsewhere"},
    )
    env = agent_environment(req, home=tmp_path / "h", tmp=tmp_path / "t", gpus=(1, 3), base=base)
    assert env["HF_TOKEN"] == "h" and env["LANG"] == "C" and env["PATH"] == "/bin"
    assert "PROBEWATCH_GITHUB_TOKEN" not in env and "PROBEWATCH_HOME" not in env
    assert env["CUDA_VISIBLE_DEVICES"] == "1,3"


EDIT_AND_HIDE = """
open('cachelib/store.py', 'a').write('\\nVERSION = 2\\n')
os.makedirs('cachelib/extra', exist_ok=True)
open('cachelib/extra/new.py', 'w').write('NEW = True\\n')
open('.gitignore', 'w').write('build/\\n')
os.makedirs('build', exist_ok=True)
open('build/artifact.bin', 'w').write('ignored')
subprocess.run(['git', 'add', '-A'], check=True)
subprocess.run(['git', 'commit', '-q', '-m', 'work'], check=True)
subprocess.run(['rm', '-rf', '.git'], check=True)  # what is read does not depend on .git
"""


def test_the_submission_is_the_tree_against_the_base_new_files_in_git_and_ignored_out(
    memo: MemoRepo, tmp_path: Path
) -> None:
    result = run_agent(request(memo, script(tmp_path, EDIT_AND_HIDE)), root=tmp_path / "runs")
    assert result.outcome is AgentOutcome.finished, result.transcript
    files = [
        line.split(" b/")[-1] for line in result.patch.splitlines() if line.startswith("diff --git")
    ]
    assert sorted(files) == [".gitignore", "cachelib/extra/new.py", "cachelib/store.py"]
    assert "+VERSION = 2" in result.patch and "+NEW = True" in result.patch
    check = tmp_path / "check"
    git(memo.source, "worktree", "add", "-q", "--detach", str(check), memo.base)
    git(check, "apply", "--check", "-", stdin=result.patch)


def test_a_patch_file_the_agent_writes_is_the_submission(memo: MemoRepo, tmp_path: Path) -> None:
    body = (
        "open('cachelib/store.py', 'a').write('# scratch\\n')\n"
        f"open(sys.argv[1], 'w').write({memo.golden!r})\n"
    )
    result = run_agent(request(memo, script(tmp_path, body) + " {patch_file}"), root=tmp_path / "r")
    assert result.source is SubmissionSource.patch_file
    assert result.patch == memo.golden


def test_the_run_folder_is_removed_afterwards(memo: MemoRepo, tmp_path: Path) -> None:
    run_agent(request(memo, script(tmp_path, "print('hi')\n")), root=tmp_path / "runs")
    assert list((tmp_path / "runs").iterdir()) == []


def test_a_command_that_cannot_start_is_not_the_models_failure(
    memo: MemoRepo, tmp_path: Path
) -> None:
    result = run_agent(request(memo, "/nonexistent/agent {workdir}"), root=tmp_path / "runs")
    assert result.outcome is AgentOutcome.cannot_start


def test_a_gpu_task_on_a_host_with_too_few_gpus_is_unschedulable(
    memo: MemoRepo, tmp_path: Path
) -> None:
    req = request(memo, "true", hardware=Hardware(gpus=2), gpu_indices=(0,))
    assert run_agent(req, root=tmp_path / "runs").outcome is AgentOutcome.unschedulable
    assert not (tmp_path / "runs").exists()
    assert assign_gpus(Hardware(gpus=2), (4, 5, 6)) == (4, 5)
    assert assign_gpus(Hardware(gpus=0), None) == ()


def test_a_patch_agent_applies_its_diff_and_an_empty_one_changes_nothing(
    memo: MemoRepo, tmp_path: Path
) -> None:
    golden = AgentRequest(memo.mirror, memo.base, "s", PatchAgent(memo.golden))
    empty = AgentRequest(memo.mirror, memo.base, "s", PatchAgent(""))
    assert run_agent(golden, root=tmp_path / "runs").patch == memo.golden
    assert run_agent(empty, root=tmp_path / "runs").empty


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("agent --repo {workdir} --key {api_key}", "unknown placeholder"),
        ("   ", "empty"),
        ("agent 'unclosed", "No closing quotation"),
    ],
)
def test_a_bad_template_is_refused_with_the_reason(template: str, problem: str) -> None:
    with pytest.raises(TemplateError, match=problem):
        check_template(template)


def test_render_command_replaces_placeholders_inside_words_without_a_shell() -> None:
    argv = render_command(
        "agent --repo={workdir} -m {model} {statement}",
        {"workdir": "/w d", "model": "m", "statement": "a; rm -rf / 'x'"}
        | dict.fromkeys(("statement_file", "budget_s", "patch_file"), ""),
    )
    assert argv == ["agent", "--repo=/w d", "-m", "m", "a; rm -rf / 'x'"]


def test_an_agent_that_swaps_its_tree_for_a_link_submits_an_empty_tree(
    memo: MemoRepo, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not the agent's")
    body = (
        "import shutil\n"
        "here = os.getcwd()\n"
        "os.chdir('/')\n"
        "shutil.rmtree(here)\n"
        f"os.symlink({str(outside)!r}, here)\n"
    )
    result = run_agent(request(memo, script(tmp_path, body)), root=tmp_path / "runs")
    assert "secret" not in result.patch
    assert "deleted file mode" in result.patch and "+++ /dev/null" in result.patch
    assert (outside / "secret.txt").exists()  # removing the run folder did not follow the link
