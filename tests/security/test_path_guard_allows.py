"""`PathGuard.allows`: the one quiet check of a file the suite reads on its own (the gateway's get_project_info and
rag_ops' manifest names, shell_ops' git alternates and config includes, the venvs found): its real path inside the
roots, outside the own state, and no secret."""

from __future__ import annotations

import os
from pathlib import Path

from mcp_sections.shared.confinement.guards.paths import PathGuard


def test_allows_a_file_inside_the_roots_that_is_no_secret_and_nothing_else(tmp_path: Path) -> None:
    root, outside, state = tmp_path / "root", tmp_path / "outside", tmp_path / "root" / "state"
    for directory in (root / "sub", outside, state):
        directory.mkdir(parents=True)
    for name in ("pyproject.toml", "sub/package.json", ".env", "sub/id_rsa", "state/config.toml"):
        (root / name).write_text("x", encoding="utf-8")
    (outside / "pyproject.toml").write_text("x", encoding="utf-8")
    (root / "linked.toml").symlink_to(outside / "pyproject.toml")  # inside by name, outside by its real path
    (root / "secret-link.toml").symlink_to(root / ".env")  # an innocent name for a secret
    guard = PathGuard([root], private=[state])
    assert guard.allows(root / "pyproject.toml") and guard.allows(os.fspath(root / "sub" / "package.json"))
    assert guard.allows(root / "sub" / ".." / "pyproject.toml") and guard.allows(root)
    for refused in (
        root / ".env",
        root / "sub" / "id_rsa",
        root / "linked.toml",
        root / "secret-link.toml",
        outside / "pyproject.toml",
        state / "config.toml",
        state,
    ):
        assert not guard.allows(refused), refused
    assert not guard.allows("") and not guard.allows(f"{root}/pyproject.toml\x00")
