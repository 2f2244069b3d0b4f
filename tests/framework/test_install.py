"""`mcp-sections install <client>` and `uninstall` (`servers/install.py`), on each client's real config format in a
temporary home: merged (every other key and server kept, VS Code's comments read), backed up, idempotent, reversible,
`--dry-run` writing nothing; the command it writes starts this installation's gateway with the settings of the
installing shell (secrets left out) and `--approval`; `--url` entries reach a running HTTP gateway with its token,
which is never written in clear unless asked (then 0600); and the gateway's default port is the one documented."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

import mcp_sections.servers
from mcp_sections.servers import install
from mcp_sections.servers.cli import INSTALLABLE, build_parser, main
from tests.processes import serving_over_http
from tests.stdio import HOST_ENVIRONMENT, NO_WARM_UP, cli_command
from tests.waiting import eventually

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


SECRET = "s3cret-token-0123456789abcdef"  # a value no client config may ever hold
TOKEN = "gateway-token-0123456789abcdef0123"


def install_in_shell(home: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`mcp-sections install <args>` run as a person runs it: a process of its own, in `home`, with `env` as the
    shell's MCP_SECTIONS_* variables (and nothing else of the test's)."""
    shell = {key: value for key, value in os.environ.items() if key in ("PATH", "PYTHONPATH")}
    shell.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), **env)
    command = [*cli_command(), "install", *args]
    return subprocess.run(command, env=shell, cwd=home, capture_output=True, text=True, timeout=120, check=True)


def entry_of(home: Path, client: str, name: str = "mcp-sections") -> dict[str, Any]:
    key = "servers" if client == "vscode" else "mcpServers"
    document = json.loads(install.without_comments((home / PATHS[client]).read_text(encoding="utf-8")))
    entry: dict[str, Any] = document[key][name]
    return entry


def test_the_entry_carries_the_settings_of_the_installing_shell_but_no_secret(home: Path) -> None:
    shell = {
        "MCP_SECTIONS_DATA_DIR": "data",  # relative: the client starts the gateway elsewhere
        "MCP_SECTIONS_APPROVAL": "destructive",
        "MCP_SECTIONS_GATEWAY_PROFILE": "readonly",
        "MCP_SECTIONS_ROOTS": "work",
        "MCP_SECTIONS_AUTH_TOKEN_FILE": "token.txt",  # names the file holding a secret: not one itself
        "MCP_SECTIONS_WEB_OPS_BRAVE_API_KEY_ENV": "BRAVE_API_KEY",  # names the variable holding it
        "MCP_SECTIONS_AUTH_TOKEN": SECRET,
        "MCP_SECTIONS_REDIS_URL": f"redis://:{SECRET}@127.0.0.1:6379/0",
        "MCP_SECTIONS_SUITE_ENDPOINTS": "http://127.0.0.1:1",  # set by a running server, never by a person
        "MCP_SECTIONS_LOG_LEVEL": "",  # empty: no setting
    }
    printed = install_in_shell(home, "claude-code", env=shell).stdout
    where = home.resolve()
    assert entry_of(home, "claude-code")["env"] == {
        "MCP_SECTIONS_APPROVAL": "destructive",
        "MCP_SECTIONS_AUTH_TOKEN_FILE": str(where / "token.txt"),
        "MCP_SECTIONS_DATA_DIR": str(where / "data"),
        "MCP_SECTIONS_GATEWAY_PROFILE": "readonly",
        "MCP_SECTIONS_ROOTS": str(where / "work"),
        "MCP_SECTIONS_WEB_OPS_BRAVE_API_KEY_ENV": "BRAVE_API_KEY",
    }
    assert SECRET not in printed and SECRET not in (home / PATHS["claude-code"]).read_text(encoding="utf-8")
    assert "MCP_SECTIONS_DATA_DIR" in printed and "MCP_SECTIONS_APPROVAL" in printed, "the person sees what is carried"
    (token_line,) = [line for line in printed.splitlines() if line.startswith("Not carried: MCP_SECTIONS_AUTH_TOKEN:")]
    assert "MCP_SECTIONS_AUTH_TOKEN_FILE" in token_line, "the setting to use instead is named"
    assert "Not carried: MCP_SECTIONS_REDIS_URL" in printed and "BRAVE_API_KEY (named by" in printed

    install_in_shell(home, "claude-code", "--name", "bare", "--no-env", "--approval", "off", env=shell)
    assert entry_of(home, "claude-code", "bare")["env"] == {"MCP_SECTIONS_APPROVAL": "off"}, "the flag still counts"

    flags = ("--name", "flags", "--data-dir", "elsewhere", "--approval", "off", "--root", "work")
    printed = install_in_shell(home, "claude-code", *flags, env=shell).stdout
    entry = entry_of(home, "claude-code", "flags")
    assert entry["env"]["MCP_SECTIONS_APPROVAL"] == "off", "--approval wins over the shell's variable"
    assert "MCP_SECTIONS_DATA_DIR" not in entry["env"] and "MCP_SECTIONS_ROOTS" not in entry["env"]
    assert entry["args"][-4:] == ["--root", str(where / "work"), "--data-dir", str(where / "elsewhere")]
    assert "Not carried: MCP_SECTIONS_DATA_DIR: --data-dir given" in printed


@pytest.mark.anyio
async def test_the_gateway_the_client_starts_runs_on_the_carried_data_dir_with_approval(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = home / "gateway-data"
    monkeypatch.setenv("MCP_SECTIONS_DATA_DIR", str(data))
    monkeypatch.setenv("MCP_SECTIONS_WARM_UP", "0")
    run(capsys, "install", "claude-desktop", "--root", str(home / "work"), "--approval", "destructive")
    entry = entry_of(home, "claude-desktop")
    # A client starts it with its own environment (none of the shell's MCP_SECTIONS_*) plus the entry's env.
    environment = {"HOME": str(home), "PATH": os.environ["PATH"], **entry["env"]}
    parameters = StdioServerParameters(command=entry["command"], args=entry["args"], env=environment)
    async with Client(parameters, mode="legacy", read_timeout_seconds=60) as client:  # type: ignore[arg-type]
        info = await client.call_tool("get_environment_info", {})
        # approval on: a stdio gateway serves its status page, announced in the data directory
        notes = await eventually(lambda: list((data / "status-pages").glob("gateway-*.txt")))
    assert info.structured_content is not None and info.structured_content["data_dir"] == str(data)
    assert len(notes) == 1


def with_token(entry: dict[str, Any]) -> dict[str, str]:
    """The entry's headers with its reference to the token resolved, as the client resolves it."""
    reference = r"\$\{(input:mcp-sections-token|env:MCP_SECTIONS_AUTH_TOKEN|MCP_SECTIONS_AUTH_TOKEN)\}"
    return {name: re.sub(reference, TOKEN, value) for name, value in entry.get("headers", {}).items()}


async def gateway_tools(url: str, headers: dict[str, str]) -> set[str]:
    async with (
        httpx.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,  # type: ignore[arg-type]
    ):
        return {tool.name for tool in (await client.list_tools()).tools}


@pytest.mark.anyio
async def test_url_entries_reach_the_running_http_gateway_without_writing_its_token(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token_file = home / "token"
    token_file.write_text(TOKEN, encoding="utf-8")
    token_file.chmod(0o600)
    vscode = home / PATHS["vscode"]
    vscode.parent.mkdir(parents=True)
    vscode.write_text(EXISTING["vscode"], encoding="utf-8")
    before = json.loads(install.without_comments(EXISTING["vscode"]))
    gateway = ["gateway", "--auth-token-file", str(token_file)]
    with serving_over_http(gateway, env={**HOST_ENVIRONMENT, **NO_WARM_UP}) as (port, _):
        url = f"http://127.0.0.1:{port}/mcp"
        for client in ("vscode", "claude-code", "cursor"):
            printed = run(capsys, "install", client, "--url", url)
            assert TOKEN not in (home / PATHS[client]).read_text(encoding="utf-8") and TOKEN not in printed
        assert entry_of(home, "vscode") == {
            "type": "http",
            "url": url,
            "headers": {"Authorization": "Bearer ${input:mcp-sections-token}"},
        }
        inputs = json.loads(install.without_comments(vscode.read_text(encoding="utf-8")))["inputs"]
        assert inputs[:-1] == before["inputs"], "the person's own inputs kept"
        assert inputs[-1]["id"] == "mcp-sections-token" and inputs[-1]["password"] is True
        assert entry_of(home, "claude-code") == {
            "type": "http",
            "url": url,
            "headers": {"Authorization": "Bearer ${MCP_SECTIONS_AUTH_TOKEN}"},
        }
        assert entry_of(home, "cursor") == {
            "url": url,
            "headers": {"Authorization": "Bearer ${env:MCP_SECTIONS_AUTH_TOKEN}"},
        }
        for client in ("vscode", "claude-code", "cursor"):
            assert "call_section_tool" in await gateway_tools(url, with_token(entry_of(home, client)))

        printed = run(capsys, "install", "cursor", "--url", url, "--token-file", str(token_file), "--name", "pinned")
        pinned = entry_of(home, "cursor", "pinned")
        assert pinned["headers"] == {"Authorization": f"Bearer {TOKEN}"} and TOKEN not in printed
        assert stat.S_IMODE((home / PATHS["cursor"]).stat().st_mode) == 0o600 and "0600" in printed
        assert "call_section_tool" in await gateway_tools(url, pinned["headers"])

    assert main(["install", "claude-desktop", "--url", url]) == 2
    assert "stdio" in capsys.readouterr().err
    assert main(["install", "cursor", "--url", url, "--root", str(home / "work")]) == 2
    assert "--root" in capsys.readouterr().err
    assert not (home / PATHS["claude-desktop"]).exists()
    run(capsys, "uninstall", "vscode")
    assert json.loads(vscode.read_text(encoding="utf-8")) == before, "the entry and its input removed, nothing else"


def test_the_gateway_s_default_port_is_the_one_its_help_and_the_readme_give(capsys: pytest.CaptureFixture[str]) -> None:
    from mcp_sections.servers.healthcheck import DEFAULT_PORT

    default = build_parser().parse_args(["gateway"]).port
    assert default == DEFAULT_PORT, "the containers' HEALTHCHECK probes the port a server without --port listens on"
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
