"""The programs' git identity file is checked once per program started (`ShellOps._identity_file`), and that one
file is both shown in the sandbox and named by GIT_CONFIG_GLOBAL: run_command and start_process checked it twice
(once for the sandbox, once for the environment), and git's probes, which get no global config, once each. The real
server in memory, real sandboxed git; the check is counted by wrapping the real `identity_file`, which still does the
work."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_sections.servers.shell_ops import service
from tests.in_memory import section_in_memory
from tests.shell_ops.repos import make_repo
from tests.stdio import call

pytestmark = pytest.mark.anyio


async def test_the_identity_file_is_checked_once_per_program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checked: list[Path | None] = []
    real = service.identity_file

    def counted(identity: service.GitIdentity) -> Path | None:
        checked.append(real(identity))
        return checked[-1]

    monkeypatch.setattr(service, "identity_file", counted)
    root = make_repo(tmp_path / "root")
    env = {
        "MCP_SECTIONS_CONFIG": str(tmp_path / "config.toml"),
        "MCP_SECTIONS_SHELL_OPS_GIT_AUTHOR_NAME": "Ada Once",
        "MCP_SECTIONS_SHELL_OPS_GIT_AUTHOR_EMAIL": "ada@once.example",
    }
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    args = ("--root", str(root), "--data-dir", str(tmp_path / "data"))
    async with section_in_memory("shell_ops", *args, env=env) as shell:
        seen = await call(shell, "run_command", command=["git", "config", "--global", "--list"])
        assert seen["stdout"].splitlines() == ["user.name=Ada Once", "user.email=ada@once.example"], seen
        assert len(checked) == 1 and checked[0] is not None, checked
        started = await call(shell, "start_process", command=["cat"])
        assert len(checked) == 2, checked
        await call(shell, "stop_process", process_id=started["process"]["process_id"])
