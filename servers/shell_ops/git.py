"""git, hardened: the repository's own config runs nothing, and the repository must lie inside the roots.

Every git process (ours and `run_command`'s) is `git <hardening -c ...> --no-pager <global options> ...`
where the hardening pins core.fsmonitor, core.hooksPath, the pager, editors, ssh, gpg and credential
helpers, and gives every diff/filter/merge/trailer driver named by the repository config a harmless
value (see `servers.shell_ops.policies.git.git_hardening_args`). The environment (processes.child_environment)
adds GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null, GIT_PAGER=cat, no GIT_EXTERNAL_DIFF; a program's git gets, as
its global config, a read-only file holding the commit identity alone instead (identity.py).

This module builds argvs and parses porcelain output; it runs processes only through the `run`
callable it is given, and has no MCP imports.
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_sections.servers.shell_ops.policies.git import git_hardening_args, unsafe_git_config_names
from mcp_sections.servers.shell_ops.processes import ProcessResult
from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

Run = Callable[[list[str], Path], Awaitable[ProcessResult]]

#: A ref or revision expression: no leading `-` (never an option), no `..` ranges, no `:` paths.
REF_PATTERN = re.compile(r"^(?!-)(?!.*\.\.)[A-Za-z0-9._/@{}~^+-]{1,200}$")
FIELD = "\x1f"
RECORD = "\x1e"
LOG_FORMAT = FIELD.join(["%H", "%h", "%an", "%ae", "%aI", "%cI", "%P", "%s", "%b"]) + RECORD
MAX_BODY_CHARS = 4000


@dataclass(frozen=True)
class Repository:
    """A git invocation prefix for one repository, checked to be inside the roots."""

    base: tuple[str, ...]  # [git, -c ..., --no-pager, *global options]
    cwd: Path
    git_dir: Path | None
    toplevel: Path | None


def _stdout(result: ProcessResult) -> str:
    return result.stdout.raw().decode("utf-8", errors="replace")


def _stderr_excerpt(result: ProcessResult) -> str:
    text = result.stderr.text().strip()
    return text[-600:] if text else "(no error output)"


async def open_repository(
    git: str, cwd: Path, guard: PathGuard, run: Run, global_options: Sequence[str] = ()
) -> Repository:
    """Probe the repository at `cwd` (if any), refuse one outside the roots, and build the hardened prefix."""
    probe_base = [git, *git_hardening_args(), "--no-pager", *global_options]
    git_dir_result = await run([*probe_base, "rev-parse", "--absolute-git-dir"], cwd)
    if git_dir_result.exit_code != 0:
        return Repository(tuple(probe_base), cwd, None, None)
    git_dir = Path(_stdout(git_dir_result).strip())
    top_result = await run([*probe_base, "rev-parse", "--show-toplevel"], cwd)
    toplevel = Path(_stdout(top_result).strip()) if top_result.exit_code == 0 and _stdout(top_result).strip() else None
    common_result = await run([*probe_base, "rev-parse", "--path-format=absolute", "--git-common-dir"], cwd)
    common_dir = Path(_stdout(common_result).strip()) if common_result.exit_code == 0 else None
    for path, what in ((git_dir, "git directory"), (common_dir, "common git directory"), (toplevel, "work tree")):
        if path is not None and not guard.contains(path):
            raise ToolFailure(
                ErrorCode.PERMISSION_DENIED,
                f"the repository's {what} is outside the allowed roots (a `.git` file, core.worktree or a "
                "parent repository leads out of them); git is only run on repositories inside the roots.",
            )
    check_alternates((common_dir or git_dir) / "objects", guard)
    names_result = await run([*probe_base, "config", "--list", "--includes", "--show-origin", "--name-only", "-z"], cwd)
    fields = _stdout(names_result).split("\0") if names_result.exit_code == 0 else []
    origins, names = fields[0:-1:2], [name for name in fields[1::2] if name]
    for origin in dict.fromkeys(origins):  # relative origins are relative to where git chdir'd: the top level
        check_config_origin(origin, toplevel or git_dir, guard)
    for name in unsafe_git_config_names(names):
        raise ToolFailure(
            ErrorCode.PERMISSION_DENIED,
            f"the repository config names a driver {name[:80]!r} that cannot be overridden safely on git's "
            "command line; git is not run on this repository. Fix its .git/config.",
        )
    base = [git, *git_hardening_args(names), "--no-pager", *global_options]
    return Repository(tuple(base), cwd, git_dir, toplevel)


MAX_ALTERNATES = 64


def check_alternates(objects: Path, guard: PathGuard, seen: set[Path] | None = None) -> None:
    """Refuse a repository that borrows objects from outside the roots (`objects/info/alternates`, followed
    through the alternates' own alternates): git would read, and `git cat-file`/`git show` print, objects
    of a repository the caller may not see."""
    seen = set() if seen is None else seen
    for name in ("alternates", "http-alternates"):
        listing = objects / "info" / name
        try:
            lines = listing.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines[:MAX_ALTERNATES]:
            entry = line.strip()
            if not entry or entry.startswith("#"):
                continue
            target = Path(os.path.realpath(os.path.join(objects, entry.strip('"'))))
            if name == "http-alternates" or not guard.allows(target):
                raise ToolFailure(
                    ErrorCode.PERMISSION_DENIED,
                    f"the repository borrows objects from {entry[:120]!r} (.git/objects/info/{name}), which is "
                    "outside the allowed roots; git is not run on this repository. Remove that file or the entry.",
                )
            if target not in seen and len(seen) < MAX_ALTERNATES:
                seen.add(target)
                check_alternates(target, guard, seen)


def check_config_origin(origin: str, base: Path, guard: PathGuard) -> None:
    """Refuse a repository whose config includes (`include.path`, `includeIf`) a file outside the roots or a
    secret file: `git config --get` would print that file's values (e.g. `~/.pypirc`'s `pypi.password`)."""
    kind, _, location = origin.partition(":")
    if kind != "file" or not location:
        return  # `command line:` (our own -c hardening), blobs never come from the repository config
    if not guard.allows(os.path.join(base, location)):
        raise ToolFailure(
            ErrorCode.PERMISSION_DENIED,
            "the repository config includes (include.path / includeIf) a file outside the allowed roots or a "
            "protected secret file; git is not run on this repository. Fix its .git/config.",
        )


def require_worktree(repo: Repository) -> Path:
    if repo.toplevel is None:
        raise ToolFailure(
            ErrorCode.NOT_FOUND,
            "the directory is not inside a git work tree; pass `cwd` pointing into a repository "
            "(relative paths start at the first root).",
        )
    return repo.toplevel


def check_ref(ref: str) -> str:
    if not REF_PATTERN.match(ref):
        raise ToolFailure(
            ErrorCode.INVALID_INPUT,
            f"{ref[:80]!r} is not an accepted revision: use a branch, tag, commit id or an expression such as "
            "HEAD~2 or main^ (letters, digits and `._/@{}~^+-`, not starting with `-`, no `..` ranges).",
        )
    return ref


async def verify_commit(repo: Repository, ref: str, run: Run) -> str:
    """The full commit id a validated ref names (NOT_FOUND if it names none). Options can never sneak in."""
    check_ref(ref)
    result = await run(
        [*repo.base, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], repo.cwd
    )
    sha = _stdout(result).strip()
    if result.exit_code != 0 or not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
        raise ToolFailure(ErrorCode.NOT_FOUND, f"{ref!r} does not name a commit in this repository.")
    return sha


def _fail(what: str, result: ProcessResult) -> ToolFailure:
    return ToolFailure(ErrorCode.EXECUTION_FAILED, f"git {what} failed: {_stderr_excerpt(result)}")


# -- status ----------------------------------------------------------------------------------------------

_KINDS = {"1": "changed", "2": "renamed", "u": "unmerged", "?": "untracked", "!": "ignored"}


async def status(repo: Repository, run: Run, *, include_untracked: bool, include_ignored: bool) -> dict[str, Any]:
    argv = [
        *repo.base,
        "status",
        "--porcelain=v2",
        "--branch",
        "-z",
        "--ignore-submodules=all",
        f"--untracked-files={'normal' if include_untracked else 'no'}",
        f"--ignored={'traditional' if include_ignored else 'no'}",
    ]
    result = await run(argv, repo.cwd)
    if result.exit_code != 0:
        raise _fail("status", result)
    return parse_status(_stdout(result))


class _NulFields:
    """The NUL-separated fields of git's `-z` output, read in order: records, each of which may take the fields
    that follow it (a rename's original path)."""

    def __init__(self, raw: str) -> None:
        self.fields = raw.split("\0")
        self.index = 0

    def records(self) -> Iterator[str]:
        """The non-empty fields not taken yet."""
        while self.index < len(self.fields):
            record = self.fields[self.index]
            self.index += 1
            if record:
                yield record

    def left(self) -> int:
        return len(self.fields) - self.index

    def take(self) -> str | None:
        """The next field (None past the end), which `records` then skips."""
        value = self.fields[self.index] if self.index < len(self.fields) else None
        self.index += 1
        return value


def parse_status(raw: str) -> dict[str, Any]:
    """`git status --porcelain=v2 --branch -z` → branch information and entries."""
    fields = _NulFields(raw)
    branch: dict[str, Any] = {"oid": None, "head": None, "upstream": None, "ahead": None, "behind": None}
    entries: list[dict[str, Any]] = []
    for record in fields.records():
        if record.startswith("# "):
            _branch_header(branch, record)
        elif (entry := _status_entry(record, fields)) is not None:
            entries.append(entry)
    head = branch["head"]
    return {
        "branch": None if head in (None, "(detached)") else head,
        "detached": head == "(detached)",
        "commit": branch["oid"],
        "upstream": branch["upstream"],
        "ahead": branch["ahead"],
        "behind": branch["behind"],
        "entries": entries,
    }


def _branch_header(branch: dict[str, Any], record: str) -> None:
    """A `# branch.*` header into `branch`."""
    key, _, value = record[2:].partition(" ")
    if key == "branch.oid":
        branch["oid"] = None if value == "(initial)" else value
    elif key == "branch.head":
        branch["head"] = value
    elif key == "branch.upstream":
        branch["upstream"] = value
    elif key == "branch.ab":
        ahead, _, behind = value.partition(" ")
        branch["ahead"], branch["behind"] = int(ahead), abs(int(behind))


def _status_entry(record: str, fields: _NulFields) -> dict[str, Any] | None:
    """One changed, renamed or copied, unmerged, untracked or ignored entry; None for a record of another kind."""
    kind = record[0]
    entry: dict[str, Any] = {"kind": _KINDS.get(kind, "changed"), "index": ".", "worktree": ".", "orig_path": None}
    if kind == "1":
        parts = record.split(" ", 8)
        entry.update(path=parts[8], index=parts[1][0], worktree=parts[1][1])
    elif kind == "2":
        parts = record.split(" ", 9)
        entry.update(path=parts[9], index=parts[1][0], worktree=parts[1][1])
        entry["kind"] = "copied" if parts[8].startswith("C") else "renamed"
        entry["orig_path"] = fields.take()
    elif kind == "u":
        parts = record.split(" ", 10)
        entry.update(path=parts[10], index=parts[1][0], worktree=parts[1][1])
    elif kind in "?!":
        entry.update(path=record[2:], index=kind, worktree=kind)
    else:
        return None
    return entry


# -- diff ------------------------------------------------------------------------------------------------


def diff_args(
    *, staged: bool, base: str | None, target: str | None, context_lines: int, paths: Sequence[str]
) -> list[str]:
    """Arguments after `git diff` (commits already verified to full ids; paths already confined)."""
    args = ["--no-ext-diff", "--no-textconv", "--no-color", "--ignore-submodules=all", f"--unified={context_lines}"]
    if staged:
        args.append("--cached")
    revisions = [rev for rev in (base, target) if rev]
    if revisions:
        args += ["--end-of-options", *revisions]
    return [*args, "--", *paths]


def parse_numstat(raw: str) -> list[dict[str, Any]]:
    """`git diff --numstat -z` → per-file additions/deletions (binary files have None counts)."""
    fields = _NulFields(raw)
    files: list[dict[str, Any]] = []
    for record in fields.records():
        parts = record.split("\t", 2)
        if len(parts) != 3:
            continue
        added, deleted, path = parts
        old_path = None
        if path == "" and fields.left() >= 2:
            old_path, path = fields.take(), fields.take() or ""
        binary = added == "-"
        files.append(
            {
                "path": path,
                "old_path": old_path,
                "additions": None if binary else int(added),
                "deletions": None if binary else int(deleted),
                "binary": binary,
            }
        )
    return files


# -- log -------------------------------------------------------------------------------------------------


def log_args(*, max_count: int, skip: int, revision: str | None, paths: Sequence[str]) -> list[str]:
    args = [
        "log",
        "--no-color",
        "--no-mailmap",
        "--no-show-signature",
        f"--format={LOG_FORMAT}",
        f"--max-count={max_count}",
        f"--skip={skip}",
    ]
    if revision:
        args += ["--end-of-options", revision]
    return [*args, "--", *paths]


def parse_log(raw: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for record in raw.split(RECORD):
        record = record.strip("\n")
        if not record:
            continue
        parts = record.split(FIELD)
        if len(parts) < 9:
            continue
        commit, short, name, email, authored, committed, parents, subject = parts[:8]
        body = FIELD.join(parts[8:]).strip()
        entries.append(
            {
                "commit": commit,
                "short": short,
                "author_name": name,
                "author_email": email,
                "author_date": authored,
                "committer_date": committed,
                "parents": parents.split(),
                "subject": subject,
                "body": body[:MAX_BODY_CHARS] + ("…" if len(body) > MAX_BODY_CHARS else ""),
            }
        )
    return entries
