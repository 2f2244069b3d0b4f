"""`mcp-sections install <client>`: connect an MCP client to the gateway in one command (and `uninstall` to undo it).

For Claude Desktop, Claude Code, Cursor and VS Code, the client's user-level config file gets one server entry (named
`mcp-sections` unless `--name`): the gateway's stdio command for *this* installation — the `mcp-sections` script of
this environment (pip, uv, pipx, uv tool, an editable checkout), `uvx --from <source>[extras] mcp-sections` when this
copy runs under uvx, else this interpreter with `-m mcp_sections.servers` — and the roots given (`--root`, absolute).

The file is merged, never replaced: every other key and server stays as it was; a file that does not parse is left
alone with an error (VS Code's `mcp.json` may carry comments and trailing commas: they are read, and kept in the
backup). Before a file changes it is copied beside itself (`<file>.bak-<time>`), and the new content replaces it
atomically with the same permissions (0600 for a new file). Installing what is there already changes nothing (no
write, no backup); `uninstall` removes the entry and nothing else; `--dry-run` prints the entry and the file and
writes nothing. The client reads the file at its next start.

These files are part of the suite's launch configuration (`shared.confinement.trusted_base.CLIENT_CONFIGS`): programs
the suite runs can never write them; this command is the person's, run by hand.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from mcp_sections.shared.ground.errors import ConfigError
from mcp_sections.shared.ground.install_hints import DEVELOPMENT_EXTRAS, complete_extras, current_installation

DEFAULT_NAME = "mcp-sections"


@dataclass(frozen=True)
class ClientConfig:
    """One client's user-level config file: where it is, which key holds the servers, how an entry looks."""

    id: str
    title: str
    relative: str  # "{config}/..." (the platform's user config directory) or "~/..."
    key: str  # the object of servers in the file
    typed: bool  # entries say `"type": "stdio"`

    def path(self) -> Path:
        config = platformdirs.user_config_dir(roaming=True)
        return Path(os.path.expanduser(self.relative.format(config=config)))

    def entry(self, command: list[str], args: list[str]) -> dict[str, Any]:
        entry: dict[str, Any] = {"type": "stdio"} if self.typed else {}
        return {**entry, "command": command[0], "args": [*command[1:], *args]}


CLIENTS = {
    client.id: client
    for client in (
        ClientConfig(
            "claude-desktop", "Claude Desktop", "{config}/Claude/claude_desktop_config.json", "mcpServers", False
        ),
        ClientConfig("claude-code", "Claude Code", "~/.claude.json", "mcpServers", True),
        ClientConfig("cursor", "Cursor", "~/.cursor/mcp.json", "mcpServers", False),
        ClientConfig("vscode", "VS Code", "{config}/Code/User/mcp.json", "servers", True),
    )
}


class InstallError(ConfigError):
    """The client's config cannot be changed as asked (it does not parse, or is not what it should be)."""


def launch_command() -> list[str]:
    """The command that starts `mcp-sections` as this copy is installed (see the module docstring)."""
    installation = current_installation()
    if installation.installer == "uvx":
        extras = sorted(set(complete_extras()) - DEVELOPMENT_EXTRAS)
        listed = f"[{','.join(extras)}]" if extras else ""
        name, at, url = installation.source.partition(" @ ")
        return ["uvx", "--from", f"{name}{listed}{at}{url}", "mcp-sections"]
    script = Path(sys.executable).parent / ("mcp-sections.exe" if os.name == "nt" else "mcp-sections")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "mcp_sections.servers"]


def gateway_args(roots: list[Path], data_dir: Path | None = None, config: Path | None = None) -> list[str]:
    """`gateway` and its flags: each root (absolute, an existing directory), the data directory and config file."""
    args = ["gateway"]
    for root in roots:
        resolved = root.expanduser().resolve()
        if not resolved.is_dir():
            raise InstallError(f"--root {root}: not an existing directory; give the folders the gateway may work in.")
        args += ["--root", str(resolved)]
    if data_dir is not None:
        args += ["--data-dir", str(data_dir.expanduser().resolve())]
    if config is not None:
        args += ["--config", str(config.expanduser().resolve())]
    return args


@dataclass(frozen=True)
class Change:
    """What `install`/`uninstall` did (or would do): the file, the entry, whether it changed, the backup made."""

    path: Path
    entry: dict[str, Any] | None
    changed: bool
    backup: Path | None = None


def install(client: ClientConfig, name: str, entry: dict[str, Any], dry_run: bool = False) -> Change:
    """Merge `entry` as server `name` into the client's config (see the module docstring)."""
    path = client.path()
    document = read_config(path)
    servers = _servers(document, client, path)
    if servers.get(name) == entry:
        return Change(path, entry, changed=False)
    servers[name] = entry
    return _written(path, document, entry, dry_run)


def uninstall(client: ClientConfig, name: str, dry_run: bool = False) -> Change:
    """Remove server `name` from the client's config (nothing else)."""
    path = client.path()
    if not path.exists():
        return Change(path, None, changed=False)
    document = read_config(path)
    servers = _servers(document, client, path)
    if name not in servers:
        return Change(path, None, changed=False)
    removed = servers.pop(name)
    return _written(path, document, removed, dry_run)


def read_config(path: Path) -> dict[str, Any]:
    """The config file as an object ({} when it does not exist yet); comments and trailing commas are read."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror}") from None
    if not text.strip():
        return {}
    try:
        document = json.loads(text)
    except ValueError:
        try:
            document = json.loads(without_comments(text))
        except ValueError as exc:
            raise InstallError(
                f"{path} is not valid JSON ({exc}); fix it or move it away, then run this again."
            ) from None
    if not isinstance(document, dict):
        raise InstallError(f"{path} does not hold a JSON object; fix it or move it away, then run this again.")
    return document


def without_comments(text: str) -> str:
    """JSON with comments (`//`, `/* */`) and trailing commas, as VS Code writes it, made plain JSON."""
    return _without_trailing_commas(_without_comment_text(text))


def _string_end(text: str, start: int) -> int:
    """The index after the string that opens at `start` (escapes included)."""
    end = start + 1
    while end < len(text) and text[end] != '"':
        end += 2 if text[end] == "\\" else 1
    return end + 1


def _without_comment_text(text: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(text):
        if text[index] == '"':
            end = _string_end(text, index)
            out.append(text[index:end])
            index = end
        elif text.startswith("//", index):
            newline = text.find("\n", index)
            index = len(text) if newline < 0 else newline
        elif text.startswith("/*", index):
            close = text.find("*/", index + 2)
            index = len(text) if close < 0 else close + 2
        else:
            out.append(text[index])
            index += 1
    return "".join(out)


def _without_trailing_commas(text: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == '"':
            end = _string_end(text, index)
            out.append(text[index:end])
            index = end
            continue
        if char == ",":
            after = index + 1
            while after < len(text) and text[after] in " \t\r\n":
                after += 1
            if after < len(text) and text[after] in "}]":
                index += 1
                continue
        out.append(char)
        index += 1
    return "".join(out)


def _servers(document: dict[str, Any], client: ClientConfig, path: Path) -> dict[str, Any]:
    servers = document.setdefault(client.key, {})
    if not isinstance(servers, dict):
        raise InstallError(f"{path}: `{client.key}` is not an object; fix it, then run this again.")
    return servers


def _written(path: Path, document: dict[str, Any], entry: dict[str, Any], dry_run: bool) -> Change:
    if dry_run:
        return Change(path, entry, changed=True)
    backup = None
    if path.exists():
        stamp = time.strftime("%Y%m%d-%H%M%S")
        backup = path.with_name(f"{path.name}.bak-{stamp}")
        count = 1
        while backup.exists():  # never over an earlier backup (it may hold the original)
            count += 1
            backup = path.with_name(f"{path.name}.bak-{stamp}-{count}")
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return Change(path, entry, changed=True, backup=backup)
