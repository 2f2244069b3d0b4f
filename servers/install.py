"""`mcp-sections install <client>`: connect an MCP client to the gateway in one command (and `uninstall` to undo it).

For Claude Desktop, Claude Code, Cursor and VS Code, the client's user-level config file gets one server entry (named
`mcp-sections` unless `--name`): the gateway's stdio command for *this* installation — the `mcp-sections` script of
this environment (pip, uv, pipx, uv tool, an editable checkout), `uvx --from <source>[extras] mcp-sections` when this
copy runs under uvx, else this interpreter with `-m mcp_sections.servers` — and the roots given (`--root`, absolute).

The entry's `env` gets the `MCP_SECTIONS_*` settings of the installing environment (`gateway_environment`): the
gateway the client starts then runs as it would in this shell (the client does not start it from this shell). Paths
are made absolute; a secret (a name with TOKEN, KEY, SECRET, PASSWORD… that does not end in `_FILE` or `_ENV`, or a
URL holding a password) is never written, and the person is told which setting to use instead; `--no-env` carries
none. `--approval` sets `MCP_SECTIONS_APPROVAL` there (the gateway has no flag for it).

`--url` adds instead an entry for a gateway already serving Streamable HTTP (`http_entry`), with its bearer token as a
reference the client resolves (VS Code asks for it once and keeps it in its secret storage; Claude Code and Cursor
read a variable of their environment), or, with `--token-file`, the token itself (the file is then made 0600).
Claude Desktop's file takes stdio servers only.

The file is merged, never replaced: every other key and server stays as it was; a file that does not parse is left
alone with an error (VS Code's `mcp.json` may carry comments and trailing commas: they are read, and kept in the
backup). Before a file changes it is copied beside itself (`<file>.bak-<time>`), and the new content replaces it
atomically with the same permissions (0600 for a new file, or one that now holds a token). Installing what is there
already changes nothing (no write, no backup); `uninstall` removes the entry (and the VS Code input it alone used)
and nothing else; `--dry-run` prints the entry and the file and writes nothing. The client reads the file at its
next start.

These files are part of the suite's launch configuration (`shared.confinement.trusted_base.CLIENT_CONFIGS`): programs
the suite runs can never write them; this command is the person's, run by hand.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import platformdirs

from mcp_sections.shared.confinement.guards.urls import is_loopback_host
from mcp_sections.shared.ground.errors import ConfigError
from mcp_sections.shared.ground.install_hints import DEVELOPMENT_EXTRAS, complete_extras, current_installation
from mcp_sections.shared.serving.http_auth import TOKEN_ENV, TOKEN_FILE_ENV, read_token_file
from mcp_sections.shared.settings.endpoints import SUITE_ENDPOINTS

DEFAULT_NAME = "mcp-sections"
APPROVAL_ENV = "MCP_SECTIONS_APPROVAL"
INPUT = "input"  # ClientConfig.token_reference of a client that asks its user for the token (VS Code's `inputs`)


@dataclass(frozen=True)
class Entry:
    """A server entry to write: the entry, the VS Code `inputs` it refers to, whether it holds a secret in clear (the
    file is then made 0600), and what the person should know about it (printed with the result)."""

    server: dict[str, Any]
    inputs: tuple[dict[str, Any], ...] = ()
    secret: bool = False
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClientConfig:
    """One client's user-level config file: where it is, which key holds the servers, how an entry looks."""

    id: str
    title: str
    relative: str  # "{config}/..." (the platform's user config directory) or "~/..."
    key: str  # the object of servers in the file
    typed: bool  # entries say `"type": "stdio"` / `"type": "http"`
    token_reference: str | None  # how a header refers to a variable ("${env:%s}"), INPUT, None: stdio servers only

    def path(self) -> Path:
        config = platformdirs.user_config_dir(roaming=True)
        return Path(os.path.expanduser(self.relative.format(config=config)))

    def entry(
        self, command: list[str], args: list[str], env: Mapping[str, str] | None = None, notes: tuple[str, ...] = ()
    ) -> Entry:
        """The stdio entry that starts `command args` (with `env` beside the client's own environment)."""
        entry: dict[str, Any] = {"type": "stdio"} if self.typed else {}
        entry.update(command=command[0], args=[*command[1:], *args])
        if env:
            entry["env"] = dict(env)
        return Entry(entry, notes=notes)


CLIENTS = {
    client.id: client
    for client in (
        ClientConfig(
            "claude-desktop", "Claude Desktop", "{config}/Claude/claude_desktop_config.json", "mcpServers", False, None
        ),
        ClientConfig("claude-code", "Claude Code", "~/.claude.json", "mcpServers", True, "${%s}"),
        ClientConfig("cursor", "Cursor", "~/.cursor/mcp.json", "mcpServers", False, "${env:%s}"),
        ClientConfig("vscode", "VS Code", "{config}/Code/User/mcp.json", "servers", True, INPUT),
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


#: The install flags that set a setting themselves: the variable of the same setting is then not carried.
FLAG_VARIABLES = {
    "--root": "MCP_SECTIONS_ROOTS",
    "--data-dir": "MCP_SECTIONS_DATA_DIR",
    "--config": "MCP_SECTIONS_CONFIG",
    "--approval": APPROVAL_ENV,
}
#: Words of a variable's name that say it holds a secret (unless the name ends in _FILE or _ENV: it then names the
#: file or the variable that holds it).
SECRET_WORDS = frozenset({"TOKEN", "KEY", "APIKEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "CREDENTIALS"})
REFERENCE_WORDS = frozenset({"FILE", "ENV"})
#: Settings that are a path, or a list of paths (`os.pathsep`): made absolute (the client starts elsewhere).
PATH_VARIABLES = frozenset({"MCP_SECTIONS_DATA_DIR", "MCP_SECTIONS_CACHE_DIR", "MCP_SECTIONS_CONFIG"})
PATH_LIST_VARIABLES = frozenset({"MCP_SECTIONS_ROOTS"})
#: Set by a running server for the programs it starts, never by a person.
INTERNAL_VARIABLES = frozenset({SUITE_ENDPOINTS})
#: The setting to use instead of a secret variable.
INSTEAD = {TOKEN_ENV: f"{TOKEN_FILE_ENV} (the path of a file holding the token, 0600)"}


@dataclass(frozen=True)
class Carried:
    """The `MCP_SECTIONS_*` settings a stdio entry gets (`env`), those left out (name -> why), and the variables the
    carried ones name, which the client must start with (a secret: never written)."""

    env: dict[str, str]
    left: dict[str, str] = field(default_factory=dict)
    named: dict[str, str] = field(default_factory=dict)  # carried *_ENV variable -> the variable it names

    def notes(self) -> tuple[str, ...]:
        """What the person is told: what was carried, what was not and why."""
        lines = []
        if self.env:
            lines.append(f"The entry's env holds these settings (from this shell and flags): {', '.join(self.env)}.")
        lines += [f"Not carried: {name}: {why}." for name, why in self.left.items()]
        lines += [
            f"{variable} (named by {name}) is not written here: the gateway reads it from the environment "
            "the client starts it with."
            for name, variable in self.named.items()
        ]
        return tuple(lines)


def gateway_environment(
    environ: Mapping[str, str], flags: Collection[str] = (), approval: str | None = None, carry: bool = True
) -> Carried:
    """The `env` of the gateway's stdio entry: the `MCP_SECTIONS_*` variables of `environ` (unless not `carry`), paths
    made absolute, without secrets, internal variables and those a given flag (`flags`) replaces; and
    `MCP_SECTIONS_APPROVAL` from `approval`."""
    replaced = {FLAG_VARIABLES[flag]: flag for flag in flags if flag in FLAG_VARIABLES}
    env: dict[str, str] = {}
    left: dict[str, str] = {}
    named: dict[str, str] = {}
    for name, value in sorted(environ.items()) if carry else ():
        upper = name.upper()
        if not upper.startswith("MCP_SECTIONS_") or value == "" or upper in INTERNAL_VARIABLES:
            continue
        if upper in replaced:
            left[name] = f"{replaced[upper]} given"
        elif _secret(upper):
            instead = INSTEAD.get(upper, "a setting ending in _FILE that names a file holding it, or the config file")
            left[name] = f"a secret, never written into a client's config; use {instead}"
        elif "://" in value and urlsplit(value.strip()).password is not None:
            left[name] = "its URL holds a password, never written into a client's config; give the password by file"
        else:
            env[name] = _absolute(upper, value)
            if upper.endswith("_ENV") and value.strip():
                named[name] = value.strip()
    if approval is not None:
        env[APPROVAL_ENV] = approval
    return Carried(dict(sorted(env.items())), left, named)


def _secret(upper: str) -> bool:
    words = upper.removeprefix("MCP_SECTIONS_").split("_")
    return words[-1] not in REFERENCE_WORDS and not SECRET_WORDS.isdisjoint(words)


def _absolute(upper: str, value: str) -> str:
    if upper in PATH_VARIABLES or upper.endswith("_FILE"):
        return str(Path(value.strip()).expanduser().resolve())
    if upper in PATH_LIST_VARIABLES:
        parts = [part for part in value.split(os.pathsep) if part.strip()]
        return os.pathsep.join(str(Path(part.strip()).expanduser().resolve()) for part in parts)
    return value


def shown_entry(entry: dict[str, Any] | None) -> dict[str, Any] | None:
    """`entry` as printed: a header value that holds a secret itself (not a `${...}` reference) hidden."""
    if entry is None or not isinstance(entry.get("headers"), dict):
        return entry
    headers = {
        header: value if not isinstance(value, str) or "${" in value else f"<hidden: {len(value)} characters>"
        for header, value in entry["headers"].items()
    }
    return {**entry, "headers": headers}


def token_input_id(name: str) -> str:
    """The id of the VS Code input that holds the token of server `name`."""
    return f"{name}-token"


def http_entry(client: ClientConfig, name: str, url: str, token_file: Path | None = None, header: bool = True) -> Entry:
    """The entry of a gateway already serving Streamable HTTP at `url`: with `header`, `Authorization: Bearer` and the
    token of `token_file` written in clear (the file is made 0600) or, without one, a reference the client resolves
    (see the module docstring)."""
    if client.token_reference is None:
        raise InstallError(
            f"{client.title} reads only stdio servers (a command it starts) from {client.path()}, not a URL, and the "
            f"suite has no stdio-to-HTTP bridge: run `mcp-sections install {client.id}` without --url to have it "
            "start a gateway on this machine, or connect to the HTTP gateway from claude-code, cursor or vscode."
        )
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InstallError(f"--url {url}: give the gateway's Streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp")
    if parts.path in ("", "/"):
        raise InstallError(f"--url {url}: the gateway's endpoint is its /mcp path: {url.rstrip('/')}/mcp")
    entry: dict[str, Any] = {"type": "http"} if client.typed else {}
    entry["url"] = url
    inputs: tuple[dict[str, Any], ...] = ()
    notes: list[str] = []
    if header and token_file is not None:
        token = read_token_file(token_file.expanduser())
        entry["headers"] = {"Authorization": f"Bearer {token}"}
        notes.append(
            f"The token of {token_file} is written in the entry itself; the config file is readable by you alone "
            "(0600)."
        )
    elif header and client.token_reference == INPUT:
        input_id = token_input_id(name)
        entry["headers"] = {"Authorization": f"Bearer ${{input:{input_id}}}"}
        description = f"Bearer token of the mcp-sections gateway at {url} (the content of its --auth-token-file)"
        inputs = ({"type": "promptString", "id": input_id, "description": description, "password": True},)
        notes.append(
            f"{client.title} asks for the gateway's token the first time it starts the server and keeps it in its "
            f"secret storage; the file holds only ${{input:{input_id}}}."
        )
    elif header:
        entry["headers"] = {"Authorization": f"Bearer {client.token_reference % TOKEN_ENV}"}
        notes.append(
            f"{client.title} reads the gateway's token from {TOKEN_ENV} in its own environment: start it with "
            f'{TOKEN_ENV}="$(cat <the gateway\'s token file>)" set; the file holds only the reference (--token-file '
            "writes the token itself, the file then 0600)."
        )
    if header and parts.scheme == "http" and not is_loopback_host(parts.hostname):
        notes.append(
            f"Warning: {parts.hostname} is reached over plain HTTP: the token crosses the network unencrypted."
        )
    return Entry(entry, inputs, secret=header and token_file is not None, notes=tuple(notes))


@dataclass(frozen=True)
class Change:
    """What `install`/`uninstall` did (or would do): the file, the entry, whether it changed, the backup made, whether
    the file was made 0600 (it holds a token)."""

    path: Path
    entry: dict[str, Any] | None
    changed: bool
    backup: Path | None = None
    private: bool = False


def install(client: ClientConfig, name: str, entry: Entry, dry_run: bool = False) -> Change:
    """Merge `entry` as server `name` into the client's config (see the module docstring)."""
    path = client.path()
    document = read_config(path)
    before = copy.deepcopy(document)
    _servers(document, client, path)[name] = entry.server
    _own_inputs(document, client, path, name, entry.inputs)
    private = entry.secret and (not path.exists() or stat.S_IMODE(path.stat().st_mode) & 0o077 != 0)
    if document == before and not private:
        return Change(path, entry.server, changed=False)
    return _written(path, document, entry.server, dry_run, private=entry.secret)


def uninstall(client: ClientConfig, name: str, dry_run: bool = False) -> Change:
    """Remove server `name` from the client's config (and the VS Code input only it used; nothing else)."""
    path = client.path()
    if not path.exists():
        return Change(path, None, changed=False)
    document = read_config(path)
    servers = _servers(document, client, path)
    if name not in servers:
        return Change(path, None, changed=False)
    removed = servers.pop(name)
    _own_inputs(document, client, path, name)
    return _written(path, document, removed, dry_run)


def _own_inputs(
    document: dict[str, Any], client: ClientConfig, path: Path, name: str, new: tuple[dict[str, Any], ...] = ()
) -> None:
    """VS Code's `inputs`: each of `new` in place of the one of the same id (else added), and the token input of
    `name` dropped once no server refers to it."""
    if client.token_reference != INPUT or ("inputs" not in document and not new):
        return
    inputs = document.get("inputs", [])
    if not isinstance(inputs, list):
        raise InstallError(f"{path}: `inputs` is not a list; fix it, then run this again.")
    by_id = {item["id"]: item for item in new}
    kept = [by_id.pop(item["id"]) if _id(item) in by_id else item for item in inputs] + list(by_id.values())
    own = token_input_id(name)
    if f"${{input:{own}}}" not in json.dumps(document.get(client.key, {})):
        kept = [item for item in kept if _id(item) != own]
    if kept or not inputs:
        document["inputs"] = kept
    else:  # only the token input of `name` was there
        del document["inputs"]


def _id(item: Any) -> Any:
    return item.get("id") if isinstance(item, dict) else None


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


def _written(
    path: Path, document: dict[str, Any], entry: dict[str, Any], dry_run: bool, private: bool = False
) -> Change:
    """Write `document` (see the module docstring); `private`: it holds a token, the file is made 0600."""
    if dry_run:
        return Change(path, entry, changed=True, private=private)
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
    mode = 0o600 if private or not path.exists() else path.stat().st_mode & 0o777
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return Change(path, entry, changed=True, backup=backup, private=private)
