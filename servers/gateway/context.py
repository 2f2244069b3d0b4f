"""The always-available context tools' work: where we are, what runs here, what project this is.

Plain Python, no MCP imports. Nothing here runs a subprocess: the git branch and commit are read from `.git` files.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from pathlib import Path
from typing import Any

from mcp_sections.shared.text.manifests import Allowed, declared, read_small_text


def _anywhere(path: Path) -> bool:
    return True


# marker file -> project type, in the order they are reported
MARKERS: tuple[tuple[str, str], ...] = (
    ("pyproject.toml", "python"),
    ("setup.py", "python"),
    ("setup.cfg", "python"),
    ("requirements.txt", "python"),
    ("package.json", "node"),
    ("Cargo.toml", "rust"),
    ("go.mod", "go"),
    ("pom.xml", "java"),
    ("build.gradle", "java"),
    ("build.gradle.kts", "kotlin"),
    ("Gemfile", "ruby"),
    ("composer.json", "php"),
    ("mix.exs", "elixir"),
    ("CMakeLists.txt", "cmake"),
    ("deno.json", "deno"),
)


def python_info() -> dict[str, str]:
    return {
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
    }


def os_info() -> dict[str, str]:
    return {"system": platform.system(), "release": platform.release(), "machine": platform.machine()}


def is_within(path: Path, roots: list[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def find_upwards(start: Path, name: str, limit: int = 40, allowed: Allowed = _anywhere) -> Path | None:
    """The nearest `name` in `start` or its parents; the walk stops at the first folder that is not allowed."""
    for index, folder in enumerate((start, *start.parents)):
        if index > limit or not allowed(folder):
            break
        if (folder / name).exists():
            return folder / name if allowed(folder / name) else None
    return None


def git_info(start: Path, allowed: Allowed = _anywhere) -> dict[str, Any] | None:
    """Branch and commit (or the detached commit) from `.git/HEAD`, following `gitdir:` files (worktrees, submodules).

    A branch's commit is read from its loose ref file or from `packed-refs`, in the worktree's own git directory or
    the repository's common one (`commondir`); a branch without commits (or refs in a format this does not read,
    reftable) has commit None. Files that are not `allowed` (a `.git` of a parent outside the roots, a `gitdir:`,
    `commondir` or ref leading out of them) are not read: with HEAD among them the answer is None, as for a folder
    outside any repository."""
    dot_git = find_upwards(start, ".git", allowed=allowed)
    if dot_git is None:
        return None
    git_dir = dot_git
    if dot_git.is_file():
        text = read_small_text(dot_git)
        match = re.match(r"gitdir:\s*(.+)", text or "")
        if not match:
            return None
        git_dir = (dot_git.parent / match.group(1).strip()).resolve()
    if not allowed(git_dir) or not allowed(git_dir / "HEAD"):
        return None
    head = (read_small_text(git_dir / "HEAD") or "").strip()
    info: dict[str, Any] = {"root": str(dot_git.parent)}
    if head.startswith("ref:"):
        ref = head[4:].strip()
        info["branch"] = ref.removeprefix("refs/heads/")
        info["detached"] = False
        info["commit"] = _resolve_ref(ref, git_dir, allowed)
    elif COMMIT_ID.fullmatch(head):
        info["branch"] = None
        info["detached"] = True
        info["commit"] = head
    else:
        return None
    return info


COMMIT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256 object names
MAX_SYMBOLIC_REFS = 5
MAX_PACKED_REFS_BYTES = 64_000_000


def _resolve_ref(ref: str, git_dir: Path, allowed: Allowed) -> str | None:
    """The commit a ref names: its loose file (per-worktree refs in `git_dir`, shared ones in the common directory),
    else its line in `packed-refs`; symbolic refs are followed a few levels."""
    common = _common_dir(git_dir, allowed)
    for _ in range(MAX_SYMBOLIC_REFS):
        if not ref.startswith("refs/") or any(part in ("", ".", "..") for part in ref.split("/")):
            return None
        target = None
        for base in dict.fromkeys((git_dir, common)):
            loose = base.joinpath(*ref.split("/"))
            if allowed(loose) and loose.is_file():
                target = (read_small_text(loose) or "").strip()
                break
        if target is None:
            return _packed_ref(common / "packed-refs", ref, allowed)
        if not target.startswith("ref:"):
            return target if COMMIT_ID.fullmatch(target) else None
        ref = target[4:].strip()
    return None


def _common_dir(git_dir: Path, allowed: Allowed) -> Path:
    """Where a worktree's repository keeps its shared refs (`commondir`), or `git_dir` itself."""
    if not allowed(git_dir / "commondir"):
        return git_dir
    pointer = (read_small_text(git_dir / "commondir") or "").strip()
    if not pointer:
        return git_dir
    common = (git_dir / pointer).resolve()
    return common if allowed(common) else git_dir


def _packed_ref(path: Path, ref: str, allowed: Allowed) -> str | None:
    """The object name `packed-refs` gives `ref` ("<name> <ref>" lines; "^" lines are peeled tags)."""
    if not allowed(path):
        return None
    try:
        if path.stat().st_size > MAX_PACKED_REFS_BYTES:
            return None
        with path.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                name, _, refname = line.rstrip("\n").partition(" ")
                if refname == ref and COMMIT_ID.fullmatch(name):
                    return name
    except OSError:
        return None
    return None


def project_info(path: Path, allowed: Allowed = _anywhere) -> dict[str, Any]:
    """Project type(s), name and version from the manifests in `path`, plus the git branch.

    A manifest that is not `allowed` (e.g. a `package.json` symlink leading out of the roots) is ignored."""
    found = [(marker, kind) for marker, kind in MARKERS if (path / marker).is_file() and allowed(path / marker)]
    types: list[str] = []
    for _, kind in found:
        if kind not in types:
            types.append(kind)
    meta = declared(path, allowed)
    return {
        "path": str(path),
        "type": types[0] if types else "unknown",
        "types": types,
        "manifests": [marker for marker, _ in found],
        "name": meta.name or path.name,
        "version": meta.version,
        "version_source": meta.version_source,
        "description": meta.description,
        "git": git_info(path, allowed),
    }


def cwd() -> Path:
    return Path(os.getcwd()).resolve()
