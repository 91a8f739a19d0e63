"""A run's own writable layer over a shared, read-only environment.

Setup commands such as ``pip install --no-deps -e .`` must not write into the
shared environment (it is frozen, and other runs use it). Each run gets a tiny
virtual environment of its own whose site-packages holds one ``.pth`` line that
adds the shared site-packages after its own (``site.addsitedir``, so the shared
``.pth`` files are honoured too). ``pip`` in the overlay runs the shared pip
with the overlay's interpreter, so installs land in the overlay; editable
installs, entry points and compiled extensions of the repository under test all
work, and disappear with the run folder. Bytecode goes to the run folder too.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from runners.env.errors import EnvError
from runners.types import EnvironmentRef

SHARED_PTH = "_probewatch_shared.pth"
PIP_WRAPPER = '#!/bin/sh\nexec "$(dirname -- "$0")/python" -m pip "$@"\n'


class EnvOverlayError(EnvError):
    """The per-run overlay could not be created."""


def site_packages(python: Path) -> Path:
    """The purelib folder of the environment ``python`` belongs to."""
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise EnvOverlayError(f"{python}: cannot read its site-packages: {done.stderr.strip()}")
    return Path(done.stdout.strip())


def host_environment() -> EnvironmentRef:
    """The interpreter running probewatch, as an environment a run's overlay can sit on: a
    repository served by it (the demo) still installs itself into the run's own layer."""
    return EnvironmentRef("host", Path(sys.prefix), Path(sys.executable))


def overlay_environment(shared: EnvironmentRef, dest: Path) -> EnvironmentRef:
    """A writable environment in ``dest`` that sees everything ``shared`` has, for one run."""
    base = _base_interpreter(shared.root, shared.python)
    done = subprocess.run(
        [str(base), "-m", "venv", "--without-pip", str(dest)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise EnvOverlayError(f"venv {dest}: {done.stderr.strip()}")
    python = dest / "bin" / "python"
    own = site_packages(python)
    # A fresh known-paths set: pip's build isolation re-runs this line and must see the
    # shared folder appear, or it cannot strip it from an isolated build's sys.path.
    line = f"import site; site.addsitedir({str(site_packages(shared.python))!r}, set())\n"
    (own / SHARED_PTH).write_text(line, encoding="utf-8")
    pip = dest / "bin" / "pip"
    pip.write_text(PIP_WRAPPER, encoding="utf-8")
    pip.chmod(0o755)
    return EnvironmentRef(
        shared.lock_hash,
        dest,
        python,
        _overlay_env(shared, dest),
        assets=shared.assets,
        spec=shared.spec,
        unavailable=shared.unavailable,
    )


def _base_interpreter(venv: Path, python: Path) -> Path:
    """The interpreter a virtual environment was made from (``home`` in pyvenv.cfg); an
    installation that is no virtual environment is its own base."""
    if not (venv / "pyvenv.cfg").is_file():
        return python
    cfg = _pyvenv_cfg(venv)
    version = cfg.get("version_info", cfg.get("version", ""))
    major_minor = ".".join(version.split(".")[:2])
    for name in (f"python{major_minor}", "python3", "python"):
        path = Path(cfg.get("home", "")) / name
        if cfg.get("home") and path.exists():
            return path
    raise EnvOverlayError(f"{venv}: pyvenv.cfg names no usable base interpreter")


def _pyvenv_cfg(venv: Path) -> dict[str, str]:
    pairs = (line.partition("=") for line in (venv / "pyvenv.cfg").read_text().splitlines())
    return {key.strip(): value.strip() for key, _, value in pairs}


def _overlay_env(shared: EnvironmentRef, dest: Path) -> dict[str, str]:
    env = {k: v for k, v in shared.env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    rest = env.get("PATH", os.environ.get("PATH", os.defpath))
    env["PATH"] = f"{dest / 'bin'}{os.pathsep}{rest}"
    env["VIRTUAL_ENV"] = str(dest)
    env["PYTHONPYCACHEPREFIX"] = str(dest / "pycache")
    # A run has no network: pip builds the repository with the environment's own build
    # backend (its build requirements are part of the environment) instead of fetching one
    # into an isolated build. pip reads this variable's "0" as "no isolation".
    env["PIP_NO_BUILD_ISOLATION"] = "0"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env
