"""Find the modules a task's tests import but the environment lacks, and decide what to add.

Requirement files are often incomplete. Collecting the tests (``pytest
--collect-only``) imports every test module and conftest; the import errors
it prints name the missing modules. Each is mapped to a distribution and
judged: added, or refused with a reason (the standard library, the repository's
own code, a distribution the config excludes, one already tried). A name the
code imports from an installed distribution that lacks it (a major release out
days before the merge, which the repository's own CI had not taken yet) holds
that distribution below the installed major version. Most packages
install a module of their own name (``requests`` from ``requests``); the table
below holds the well-known exceptions, a dotted key winning over its top-level
name (``google.protobuf`` before ``google``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from runners.env.config import RepoEnvConfig
from runners.env.manifest import Repair, RepairOutcome
from runners.types import EnvironmentRef

COLLECT_TIMEOUT_S = 900.0
OUTPUT_TAIL_CHARS = 6000

# Messages that name a module (or library) the environment lacks. Data, not if-chains.
MISSING_MODULE_SIGNATURES: tuple[re.Pattern[str], ...] = (
    re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'"),
    re.compile(r"ImportError: No module named '?([\w.]+)'?"),
    # transformers' own check: "... requires the protobuf library but it was not found ..."
    re.compile(r"requires the ([\w.-]+) library but it was not found"),
)
# A name missing from a package installed in the environment (its path is under site-packages),
# not from the repository's own code.
MISSING_NAME = re.compile(
    r"ImportError: cannot import name '(\w+)' from '([\w.]+)' \([^)]*site-packages[^)]*\)"
)
# Variables a collection run may inherit from the host; everything else is left out.
PASSED_THROUGH = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")

MODULE_TO_DISTRIBUTION: dict[str, str] = {
    "yaml": "PyYAML",
    "cv2": "opencv-python-headless",
    "PIL": "Pillow",
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "google.protobuf": "protobuf",
    "attr": "attrs",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "dotenv": "python-dotenv",
    "jwt": "PyJWT",
    "Crypto": "pycryptodome",
    "OpenSSL": "pyOpenSSL",
    "serial": "pyserial",
    "magic": "python-magic",
    "git": "GitPython",
    "github": "PyGithub",
    "zmq": "pyzmq",
    "fitz": "PyMuPDF",
    "docx": "python-docx",
    "pptx": "python-pptx",
    "Levenshtein": "python-Levenshtein",
    "hydra": "hydra-core",
    "tensorboardX": "tensorboardX",
    "pynvml": "nvidia-ml-py",
    "multipart": "python-multipart",
    "jose": "python-jose",
    "Bio": "biopython",
    "pkg_resources": "setuptools",
    # GPU builds repositories' environment configs leave out, where the module differs.
    "megatron.core": "megatron-core",
    "flashinfer": "flashinfer-python",
    "cupy": "cupy-cuda12x",
}


def modules_of(distribution: str) -> frozenset[str]:
    """The import names ``distribution`` provides, as far as the table knows: its own name
    with underscores, and every module the table maps to it."""
    wanted = canonicalize_name(distribution)
    named = {m for m, d in MODULE_TO_DISTRIBUTION.items() if canonicalize_name(d) == wanted}
    return frozenset({*named, wanted.replace("-", "_")})


def distribution_for(module: str) -> str:
    """The distribution to install for ``module`` (a dotted name from an import error)."""
    parts = module.split(".")
    for length in range(len(parts), 0, -1):
        found = MODULE_TO_DISTRIBUTION.get(".".join(parts[:length]))
        if found is not None:
            return found
    return parts[0].replace("_", "-")


@dataclass(frozen=True)
class Collection:
    returncode: int
    output: str  # tail of pytest's stdout and stderr

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def collect(
    ref: EnvironmentRef, worktree: Path, tests: Sequence[str], timeout_s: float = COLLECT_TIMEOUT_S
) -> Collection:
    """Run ``pytest --collect-only`` for ``tests`` in ``worktree`` with environment ``ref``."""
    env = {k: os.environ[k] for k in PASSED_THROUGH if k in os.environ}
    env.update(ref.env)
    env["PYTHONPATH"] = str(worktree)
    cmd = [str(ref.python), "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    try:
        done = subprocess.run(
            [*cmd, *tests],
            cwd=worktree,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        return Collection(-1, f"collection timed out after {timeout_s:.0f}s: {exc}")
    return Collection(done.returncode, (done.stdout + done.stderr)[-OUTPUT_TAIL_CHARS:])


def missing_modules(output: str) -> list[str]:
    """Modules named by import errors in ``output``, first appearance first, each once."""
    found: dict[str, None] = {}
    for pattern in MISSING_MODULE_SIGNATURES:
        for match in pattern.finditer(output):
            found.setdefault(match.group(1), None)
    return list(found)


def missing_names(output: str) -> list[tuple[str, str]]:
    """(module, name) pairs of names installed packages lack, first appearance first, once."""
    found: dict[tuple[str, str], None] = {}
    for match in MISSING_NAME.finditer(output):
        found.setdefault((match.group(2), match.group(1)), None)
    return list(found)


def hold_back(
    module: str, name: str, pinned: str | None, *, round_: int, tried: set[str]
) -> Repair:
    """What to do about ``name`` missing from the installed ``module``: hold its distribution
    below the installed major version, once."""
    distribution = distribution_for(module)
    version = pinned.partition("==")[2] if pinned else ""
    major = version.split(".")[0]
    if not major.isdigit() or int(major) == 0:
        return Repair(
            module=module,
            distribution=distribution,
            round=round_,
            outcome=RepairOutcome.unresolvable,
            detail=f"{module} lacks {name!r} and no older major release can be chosen",
        )
    if canonicalize_name(distribution) in tried:
        return Repair(
            module=module,
            distribution=distribution,
            round=round_,
            outcome=RepairOutcome.unresolvable,
            detail=f"still lacks {name!r} after it was held back once",
        )
    return Repair(
        module=module,
        distribution=distribution,
        round=round_,
        outcome=RepairOutcome.held_back,
        detail=f"{distribution} {version} lacks {name!r}: held below {major}",
        requirement=f"{distribution}<{major}",
    )


def judge(
    module: str,
    *,
    round_: int,
    worktree: Path,
    config: RepoEnvConfig,
    tried: set[str],
) -> Repair:
    """What to do about one missing module: a :class:`Repair` whose outcome says it."""
    distribution = distribution_for(module)
    top = module.split(".")[0]
    if top in sys.stdlib_module_names:
        return Repair(
            module=module,
            distribution=None,
            round=round_,
            outcome=RepairOutcome.not_installable,
            detail="standard library module",
        )
    if _is_own_module(worktree, top):
        return Repair(
            module=module,
            distribution=None,
            round=round_,
            outcome=RepairOutcome.not_installable,
            detail="the repository's own module: a path or setup problem, not a package",
        )
    if canonicalize_name(distribution) in config.excluded_names:
        return Repair(
            module=module,
            distribution=distribution,
            round=round_,
            outcome=RepairOutcome.excluded,
            detail="excluded by the environment config",
        )
    if canonicalize_name(distribution) in tried:
        return Repair(
            module=module,
            distribution=distribution,
            round=round_,
            outcome=RepairOutcome.unresolvable,
            detail="already added once and still missing",
        )
    return Repair(
        module=module, distribution=distribution, round=round_, outcome=RepairOutcome.added
    )


def _is_own_module(worktree: Path, top: str) -> bool:
    return any(
        (base / top).is_dir() or (base / f"{top}.py").is_file()
        for base in (worktree, worktree / "src")
    )
