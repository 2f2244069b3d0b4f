"""Fast start: `mcp-sections serve <section>` answers `initialize` and `tools/list` before the SDK is imported.

Importing the `mcp` SDK takes most of a second (its pydantic models for three protocol versions), longer
than a whole Node MCP server needs to start. A section's answers to `initialize` and `tools/list` only
depend on its code, the SDK's and its configuration, so the server records them (`StartupRecorder`) the
first time it serves them, under a key made of all of these. On a later start with the same key, this
module, which imports nothing heavy, answers those requests (and `ping`) itself while the section and the
SDK are imported in a background thread, then hands the connection over (`Handover`): the SDK reads the
same requests first, so its session state is what it would have been, and its own replies to the
requests answered here are dropped.

Anything else — another method, a line that is not a JSON-RPC object, an initialize asking for a protocol
version not recorded, a modern-era (2026-07-28) client that sends no initialize — ends the preface: from
there the SDK answers everything, as without it. `MCP_SECTIONS_FAST_START=0` turns it off.

The cache lives in `<cache dir>/startup/` (`MCP_SECTIONS_CACHE_DIR`, else the user cache directory). Its
key covers the command line, every `MCP_SECTIONS_*` variable, the config file's bytes, the interpreter, and
the size and modification time of every source file of this package and of the `mcp` packages.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import select
import stat
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CACHE_FORMAT = 1
SWITCH = "MCP_SECTIONS_FAST_START"
RECORDED = ("initialize", "tools/list")
_SECTION_ID = re.compile(r"[a-z][a-z0-9_]{0,40}")
_FINGERPRINTED = ("mcp_sections", "mcp", "mcp_types")


@dataclass
class Handover:
    """What the preface leaves to the stdio transport.

    `lines` are complete lines it read, to be served first and in order; `pending` is a partial line it
    read; the SDK's responses to the request ids in `answered` are dropped (the preface wrote them);
    `recorder` sees the traffic so that a later start can answer early.
    """

    lines: list[bytes] = field(default_factory=list)
    pending: bytes = b""
    answered: set[str | int] = field(default_factory=set)
    recorder: StartupRecorder | None = None


class StartupRecorder:
    """Writes the answers this server gave to `initialize` and `tools/list`, per requested protocol version."""

    def __init__(self, path: Path, known: dict[str, dict[str, Any]] | None) -> None:
        self._path = path
        self._answers: dict[str, dict[str, Any]] = {version: dict(entry) for version, entry in (known or {}).items()}
        self._waiting: dict[str | int, tuple[str, str]] = {}  # request id -> (method, protocol version)
        self._version: str | None = None

    def request(self, request_id: str | int, method: str, params: dict[str, Any] | None) -> None:
        if method == "initialize":
            version = (params or {}).get("protocolVersion")
            if isinstance(version, str):
                self._version = version
                self._waiting[request_id] = (method, version)
        elif method == "tools/list" and self._version is not None and not (params or {}).get("cursor"):
            self._waiting[request_id] = (method, self._version)

    def response(self, request_id: str | int, serialized: bytes) -> None:
        waiting = self._waiting.pop(request_id, None)
        if waiting is None:
            return
        method, version = waiting
        result = json.loads(serialized).get("result")
        if not isinstance(result, dict) or (method == "tools/list" and result.get("nextCursor")):
            return
        entry = self._answers.setdefault(version, {})
        if entry.get(method) == result:
            return
        entry[method] = result
        if all(name in entry for name in RECORDED):
            self._save()

    def _save(self) -> None:
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=self._path.parent, delete=False, suffix=".tmp") as file:
                json.dump({"format": CACHE_FORMAT, "answers": self._answers}, file)
            os.replace(file.name, self._path)
        except OSError:  # a read-only cache directory only costs the fast start
            with contextlib.suppress(OSError):
                os.unlink(file.name)


def served_section(argv: list[str]) -> str | None:
    """The section of `serve <section> ...` over stdio, or None for any other command line."""
    if len(argv) < 2 or argv[0] != "serve" or not _SECTION_ID.fullmatch(argv[1]):
        return None
    for index, arg in enumerate(argv):
        if arg in ("-h", "--help") or (arg.startswith("--transport=") and arg != "--transport=stdio"):
            return None
        if arg == "--transport" and argv[index + 1 : index + 2] != ["stdio"]:
            return None
    return argv[1]


def cache_path(argv: list[str]) -> Path:
    """Where the answers of a server started with `argv` (and this environment and code) are kept."""
    from mcp_sections.shared.locations import default_cache_dir, find_config_file

    explicit = None
    for index, arg in enumerate(argv):
        if arg == "--config" and index + 1 < len(argv):
            explicit = Path(argv[index + 1])
        elif arg.startswith("--config="):
            explicit = Path(arg.partition("=")[2])
    config = find_config_file(explicit)
    digest = hashlib.sha256()
    for part in (
        json.dumps(argv),
        json.dumps(sorted((key, value) for key, value in os.environ.items() if key.startswith("MCP_SECTIONS_"))),
        sys.executable,
        str(config),
        _file_bytes(config),
        _code_fingerprint(),
    ):
        digest.update(part if isinstance(part, bytes) else part.encode("utf-8", "surrogateescape"))
        digest.update(b"\0")
    return default_cache_dir() / "startup" / f"{argv[1]}-{digest.hexdigest()[:32]}.json"


def _file_bytes(path: Path | None) -> bytes:
    if path is None:
        return b""
    try:
        return path.read_bytes()
    except OSError:
        return b"(unreadable)"


def _code_fingerprint() -> str:
    """Size and modification time of every source file of the packages whose code shapes the answers."""
    entries: list[str] = []
    for package in _FINGERPRINTED:
        spec = importlib.util.find_spec(package)
        for location in (spec.submodule_search_locations or []) if spec else []:
            for directory, _, files in os.walk(location):
                for name in files:
                    if name.endswith((".py", ".json")):
                        with contextlib.suppress(OSError):
                            info = os.stat(os.path.join(directory, name))
                            entries.append(f"{directory}/{name}:{info.st_size}:{info.st_mtime_ns}")
    return "\n".join(sorted(entries))


def _load(path: Path) -> dict[str, dict[str, Any]] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    answers = data.get("answers") if isinstance(data, dict) and data.get("format") == CACHE_FORMAT else None
    return answers if isinstance(answers, dict) else None


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def answer_early(argv: list[str], load: Callable[[], None]) -> Handover | None:
    """For `serve <section>` over stdio: the preface, run while `load` imports the server in a thread.

    Returns None for other command lines (nothing recorded, nothing answered), else what the transport
    takes over. `load` has always finished when this returns.
    """
    if os.environ.get(SWITCH, "1") == "0" or served_section(argv) is None:
        return None
    try:
        path = cache_path(argv)
    except Exception:  # the preface must never stop the server from starting
        return None
    known = _load(path)
    handover = Handover(recorder=StartupRecorder(path, known))
    if not known or not (_is_pipe(0) and _is_pipe(1)):
        with contextlib.suppress(Exception):  # the CLI imports again and reports it
            load()
        return handover
    _Preface(known, handover).run(load)
    return handover


class _Preface:
    """Reads stdin and answers the early requests until the server is loaded or a request needs it."""

    def __init__(self, known: dict[str, dict[str, Any]], handover: Handover) -> None:
        self._known = known
        self._handover = handover
        self._answers: dict[str, Any] | None = None  # the recorded answers of the version this client asked for

    def run(self, load: Callable[[], None]) -> None:
        wake_read, wake_write = os.pipe()
        loaded = threading.Event()

        def loader() -> None:
            try:
                with contextlib.suppress(Exception):  # the main thread imports again and reports it
                    load()
            finally:
                loaded.set()
                os.write(wake_write, b"!")

        threading.Thread(target=loader, name="server-import", daemon=True).start()
        buffer = b""
        try:
            while not loaded.is_set():
                ready, _, _ = select.select([0, wake_read], [], [])
                if 0 not in ready:
                    continue
                chunk = os.read(0, 65536)
                if not chunk:
                    break
                buffer += chunk
                *complete, buffer = buffer.split(b"\n")
                stopped = self._take(complete)
                if stopped is not None:
                    buffer = stopped + buffer
                    break
        finally:
            loaded.wait()
            os.close(wake_read)
            os.close(wake_write)
        self._handover.pending = buffer

    def _take(self, lines: list[bytes]) -> bytes | None:
        """Answer what can be answered; the unread rest (from the first line that needs the server) or None."""
        for index, line in enumerate(lines):
            if not self._answer(line):
                return b"".join(rest + b"\n" for rest in lines[index:])
            self._handover.lines.append(line)
        return None

    def _answer(self, line: bytes) -> bool:
        """Write the answer of an early request; False when the line needs the real server."""
        try:
            message = json.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return False
        method, request_id, params = message.get("method"), message.get("id"), message.get("params")
        if method == "notifications/initialized" and "id" not in message:
            return True
        if not isinstance(request_id, str | int) or isinstance(request_id, bool):
            return False
        if params is not None and not isinstance(params, dict):
            return False
        if method == "initialize" and self._answers is None:
            answers = self._known.get(str((params or {}).get("protocolVersion")))
            if not answers or not all(name in answers for name in RECORDED):
                return False
            self._answers = answers
            result = answers["initialize"]
        elif method == "tools/list" and self._answers is not None and not (params or {}).get("cursor"):
            result = self._answers["tools/list"]
        elif method == "ping" and self._answers is not None:
            result = {}
        else:
            return False
        self._handover.answered.add(request_id)
        write_all(1, json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode() + b"\n")
        return True


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` to a blocking descriptor."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main() -> int:
    """The `mcp-sections` command: the preface for `serve`, then the CLI."""
    argv = sys.argv[1:]

    def load() -> None:
        from mcp_sections.servers import cli

        cli.prepare(argv)

    handover = answer_early(argv, load)
    from mcp_sections.servers.cli import main as cli_main

    return cli_main(argv, handover=handover)
