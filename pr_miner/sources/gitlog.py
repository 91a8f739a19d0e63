"""Stream-parse ``git log --first-parent -z --numstat`` in one pass.

Each commit starts with a record separator (0x1E) and carries its fields
separated by 0x1F: sha, parents, committer time, author, raw message; the
NUL-separated ``--numstat`` entries follow (``-`` counts mark a binary file; a
rename is an empty path followed by the old and new paths). The output is read
in chunks while git is still writing, so parsing overlaps git's own diff work.
User configuration that would change the output (signatures in the log,
relative diffs, external diff drivers) is switched off on the command line.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pr_miner.errors import GitFailed
from pr_miner.types import FileChange
from probewatch.git import GIT_CONFIG, git_env

RECORD, FIELD = b"\x1e", b"\x1f"
HEADER = "%x1e%H%x1f%P%x1f%ct%x1f%aN%x1f%B%x1f"
CHUNK = 1 << 16
LOG_ARGS = ("log", "--first-parent", "-z", "--encoding=UTF-8", "--no-color", f"--format={HEADER}")
NUMSTAT_ARGS = ("--numstat", "-M", "--diff-merges=first-parent", "--no-ext-diff", "--no-textconv")


@dataclass(frozen=True, slots=True)
class RawCommit:
    sha: str
    parents: tuple[str, ...]
    committed_at: datetime
    author: str
    message: str
    files: tuple[FileChange, ...] = ()


def log_commits(repo: Path, revisions: Sequence[str], *, numstat: bool) -> Iterator[RawCommit]:
    """Mainline commits of ``revisions``, newest first, parsed while git writes them."""
    args = [*LOG_ARGS, *(NUMSTAT_ARGS if numstat else ()), *revisions, "--"]
    for record in _stream_records(repo, args):
        yield parse_record(record)


def _stream_records(repo: Path, args: list[str]) -> Iterator[bytes]:
    command = ["git", "-C", str(repo), *GIT_CONFIG, *args]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=git_env()
    )
    stdout, stderr_pipe = process.stdout, process.stderr
    assert stdout is not None and stderr_pipe is not None
    try:
        yield from _split_records(iter(lambda: stdout.read(CHUNK), b""))
        stderr = stderr_pipe.read()
        if process.wait() != 0:
            message = stderr.decode("utf-8", "replace").strip()
            raise GitFailed(f"git {' '.join(args[:2])} failed in {repo}: {message}")
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        stdout.close()
        stderr_pipe.close()


def _split_records(chunks: Iterator[bytes]) -> Iterator[bytes]:
    pending = b""
    for chunk in chunks:
        pending += chunk
        *complete, pending = pending.split(RECORD)
        for record in complete:
            if record:
                yield record
    if pending:
        yield pending


def parse_record(record: bytes) -> RawCommit:
    """One commit record (without its leading separator)."""
    fields = record.split(FIELD, 5)
    if len(fields) != 6 or len(fields[0]) < 40:
        raise GitFailed(f"unexpected git log output near {record[:80]!r}")
    sha, parents, stamp, author, message, rest = fields
    return RawCommit(
        sha=sha.decode(),
        parents=tuple(parents.decode().split()),
        committed_at=datetime.fromtimestamp(int(stamp), UTC),
        author=author.decode("utf-8", "replace"),
        message=message.decode("utf-8", "replace"),
        files=parse_numstat(rest),
    )


def parse_numstat(section: bytes) -> tuple[FileChange, ...]:
    """The ``-z --numstat`` entries after a commit's header."""
    tokens = section.lstrip(b"\x00\n").split(b"\x00")
    files: list[FileChange] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if not token.strip():
            continue
        added, deleted, path = token.split(b"\t", 2)
        old_path = None
        if not path:  # a rename or copy: old and new path follow as their own entries
            old_path, path = tokens[index], tokens[index + 1]
            index += 2
        files.append(_file_change(added, deleted, path, old_path))
    return tuple(files)


def _file_change(added: bytes, deleted: bytes, path: bytes, old_path: bytes | None) -> FileChange:
    binary = added == b"-"
    return FileChange(
        path=path.decode("utf-8", "replace"),
        additions=0 if binary else int(added),
        deletions=0 if binary else int(deleted),
        binary=binary,
        old_path=old_path.decode("utf-8", "replace") if old_path is not None else None,
    )


def read_blobs(repo: Path, names: Sequence[str]) -> dict[str, str]:
    """``{"<rev>:<path>": text}`` for each name that exists, through one ``git cat-file --batch``.

    Missing names are left out; contents that are not UTF-8 are decoded with replacement.
    """
    request = "".join(f"{name}\n" for name in names).encode()
    done = subprocess.run(
        ["git", "-C", str(repo), *GIT_CONFIG, "cat-file", "--batch"],
        input=request,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise GitFailed(f"git cat-file --batch failed in {repo}: {done.stderr.decode().strip()}")
    found: dict[str, str] = {}
    out, offset = done.stdout, 0
    for name in names:
        end = out.index(b"\n", offset)
        header = out[offset:end].split()
        offset = end + 1
        if len(header) != 3 or header[1] != b"blob":
            continue  # "<name> missing", or not a file
        size = int(header[2])
        found[name] = out[offset : offset + size].decode("utf-8", errors="replace")
        offset += size + 1  # the contents end with a newline of their own
    return found
