"""`mcp-sections install <client>` and `uninstall` (`servers/install.py`), on each client's real config format in a
temporary home: merged (every other key and server kept, VS Code's comments read), backed up, idempotent, reversible,
`--dry-run` writing nothing; and the command it writes starts this installation's gateway."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

import mcp_sections.servers
from mcp_sections.servers import install
from mcp_sections.servers.cli import INSTALLABLE, build_parser, main

EXISTING: dict[str, str] = {
    "claude-desktop": json.dumps(
        {
            "mcpServers": {
                "filesystem": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"],
                }
            },
            "globalShortcut": "Ctrl+Space",
        },
        indent=2,
    ),
    "claude-code": json.dumps(
        {
            "numStartups": 12,
            "projects": {"/home/me/app": {"mcpServers": {}, "allowedTools": ["Bash(git status)"]}},
            "mcpServers": {"github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}},
            "userID": "0f3c",
        }
    ),
    "cursor": json.dumps({"mcpServers": {"context7": {"url": "https://mcp.context7.com/mcp"}}}, indent=2),
    "vscode": """{
  // Servers I use every day
  "servers": {
    "github": { "type": "http", "url": "https://api.githubcopilot.com/mcp/", },
    /* "old": { "command": "x" }, */
  },
  "inputs": [
    { "type": "promptString", "id": "token", "description": "GitHub token, // not a comment", "password": true },
  ],
}
""",
}
PATHS = {
    "claude-desktop": ".config/Claude/claude_desktop_config.json",
    "claude-code": ".claude.json",
    "cursor": ".cursor/mcp.json",
    "vscode": ".config/Code/User/mcp.json",
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / "work").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return home


def run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(list(args)) == 0
    return capsys.readouterr().out


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.bak-*"))


def test_the_cli_knows_every_client_install_knows() -> None:
    assert sorted(install.CLIENTS) == list(INSTALLABLE)


@pytest.mark.parametrize("client", sorted(EXISTING))
def test_install_merges_backs_up_is_idempotent_and_uninstall_restores(
    home: Path, client: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / PATHS[client]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(EXISTING[client], encoding="utf-8")
    before = json.loads(install.without_comments(EXISTING[client]))
    root = home / "work"

    printed = run(capsys, "install", client, "--root", str(root), "--dry-run")
    assert path.read_text(encoding="utf-8") == EXISTING[client] and backups(path) == [], "--dry-run writes nothing"
    assert str(path) in printed and str(root) in printed

    run(capsys, "install", client, "--root", str(root))
    after = json.loads(path.read_text(encoding="utf-8"))
    key = "servers" if client == "vscode" else "mcpServers"
    entry = after[key]["mcp-sections"]
    assert entry["command"] == install.launch_command()[0]
    assert entry["args"][-3:] == ["gateway", "--root", str(root.resolve())]
    assert (entry.get("type") == "stdio") == (client in ("claude-code", "vscode")), "each client's own format"
    del after[key]["mcp-sections"]
    assert after == before, "every other key and server kept"
    (backup,) = backups(path)
    assert backup.read_text(encoding="utf-8") == EXISTING[client], "the original, comments included"

    again = run(capsys, "install", client, "--root", str(root))
    assert "nothing changed" in again and len(backups(path)) == 1, "installing twice changes nothing"

    run(capsys, "uninstall", client)
    assert json.loads(path.read_text(encoding="utf-8")) == before
    assert "nothing changed" in run(capsys, "uninstall", client)


def test_a_new_config_file_is_private_and_a_broken_one_is_left_alone(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "install", "cursor", "--root", str(home / "work"))
    path = home / PATHS["cursor"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and backups(path) == []

    broken = home / PATHS["claude-desktop"]
    broken.parent.mkdir(parents=True)
    broken.write_text('{"mcpServers": {', encoding="utf-8")
    assert main(["install", "claude-desktop"]) == 2
    assert "is not valid JSON" in capsys.readouterr().err and broken.read_text(encoding="utf-8") == '{"mcpServers": {'
    assert main(["install", "cursor", "--root", str(home / "nowhere")]) == 2
    assert "not an existing directory" in capsys.readouterr().err


@pytest.mark.anyio
async def test_the_command_written_starts_this_installations_gateway(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "install", "claude-desktop", "--root", str(home / "work"), "--data-dir", str(home / "data"))
    entry: dict[str, Any] = json.loads((home / PATHS["claude-desktop"]).read_text(encoding="utf-8"))["mcpServers"][
        "mcp-sections"
    ]
    environment = {"HOME": str(home), "PATH": os.environ["PATH"], "MCP_SECTIONS_CONFIG": os.devnull}
    parameters = StdioServerParameters(command=entry["command"], args=entry["args"], env=environment)
    async with Client(parameters, mode="legacy", read_timeout_seconds=60) as client:  # type: ignore[arg-type]
        names = {tool.name for tool in (await client.list_tools()).tools}
        roots = await client.call_tool("get_working_directory", {})
    assert {"call_section_tool", "plan_actions", "find_tools"} <= names
    assert str((home / "work").resolve()) in json.dumps(roots.structured_content)


def test_under_uvx_the_command_makes_the_same_environment_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_sections.shared.ground.install_hints import Installation

    uvx = Installation("uvx", "mcp-sections @ git+https://example.org/mcp-sections", False, "/tmp/uv/python")
    monkeypatch.setattr(install, "current_installation", lambda: uvx)
    monkeypatch.setattr(install, "complete_extras", lambda: ["dev", "web", "files"])
    command = install.launch_command()
    assert command == [
        "uvx",
        "--from",
        "mcp-sections[files,web] @ git+https://example.org/mcp-sections",
        "mcp-sections",
    ]


def test_the_gateway_s_default_port_is_the_one_its_help_and_the_readme_give(capsys: pytest.CaptureFixture[str]) -> None:
    default = build_parser().parse_args(["gateway"]).port
    with pytest.raises(SystemExit):
        main(["gateway", "--help"])
    assert f"HTTP port (default {default})" in " ".join(capsys.readouterr().out.split())
    checkout = Path(mcp_sections.servers.__file__).resolve().parents[1]
    readme = (checkout / "README.md").read_text(encoding="utf-8")
    assert "PORT ?= 8765" in (checkout / "Makefile").read_text(encoding="utf-8")
    assert f"default port is {default}" in " ".join(readme.split()), (
        "the README says 8765 is make run's, not the default"
    )
    (status,) = [paragraph for paragraph in readme.split("\n\n") if paragraph.startswith("**Status page.**")]
    status = " ".join(status.split())
    assert f"127.0.0.1:{default}/status" in status and "`make run` and compose pass `--port 8765`" in status
