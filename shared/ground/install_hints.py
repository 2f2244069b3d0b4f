"""How to add an extra of mcp-sections, said for the way this copy was installed.

`install_hint("media")` is the one sentence every "not installed" message ends with (DEPENDENCY_ERROR, doctor,
the embedder's reasons): a command that, run as written, brings the extra into *this* environment:

- pip in a virtual environment: `'<its python>' -m pip install '<source>[media]'` (`-e` for an editable checkout);
- uv (`uv pip install`, `uv venv`): `uv pip install --python '<its python>' '<source>[media]'`;
- pipx: `pipx runpip mcp-sections install '<source>[media]'` (pip inside pipx's environment);
- uv tool: `uv tool install --force '<source>[<extras it has>,media]'`;
- uvx: a new environment at each start, so the server is restarted as `uvx --from '<source>[...]' mcp-sections`.

`<source>` is where this copy came from (its `direct_url.json`): a checkout's directory, a URL, else the name
`mcp-sections`. The torch extra also names PyTorch's CPU index, so that pip does not take a multi-GB CUDA build.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit

DIST = "mcp-sections"
TORCH_EXTRA = "embeddings-torch"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: The extras for working on the suite (tools, test programs, benchmarks' yardsticks): never part of a fix.
DEVELOPMENT_EXTRAS = frozenset({"dev", "test-tools", "bench"})
Installer = Literal["pip", "uv", "pipx", "uv-tool", "uvx"]
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")


@dataclass(frozen=True)
class Installation:
    """Where this copy of mcp-sections lives and what put it there."""

    installer: Installer
    source: str  # what pip/uv install: a directory, a URL, or the distribution's name
    editable: bool
    python: str  # this environment's interpreter


def install_command(extra: str, installation: Installation | None = None) -> str:
    """The shell command that adds `extra` to this environment (for uvx: the command that starts the server)."""
    found = installation or current_installation()
    torch = extra == TORCH_EXTRA
    if found.installer in ("uv-tool", "uvx"):  # one requirement per environment: every extra it has, and this one
        wanted = _spec(found.source, sorted({*complete_extras(), extra} - DEVELOPMENT_EXTRAS), editable=False)
        index = f" --index {TORCH_CPU_INDEX}" if torch else ""  # uv asks an --index before PyPI
        if found.installer == "uvx":
            return f"uvx{index} --from {wanted} mcp-sections"
        return f"uv tool install --force{index} {wanted}"
    if found.installer == "pipx":
        pip = f"pipx runpip {shlex.quote(Path(sys.prefix).name)} install"
    elif found.installer == "uv":
        pip = f"uv pip install --python {shlex.quote(found.python)}"
    else:
        pip = f"{shlex.quote(found.python)} -m pip install"
    install = f"{pip} {_spec(found.source, [extra], editable=found.editable)}"
    # torch first, from the CPU index: the extra then finds it installed (else pip takes a multi-GB CUDA build)
    return f"{pip} torch --index-url {TORCH_CPU_INDEX} && {install}" if torch else install


def install_hint(extra: str) -> str:
    """`run: <command>, then restart the server` (for uvx: `restart the server as: <command>`)."""
    command = install_command(extra)
    if current_installation().installer == "uvx":
        return f"restart the server as: {command} (uvx makes its environment anew at each start)"
    return f"run: {command}, then restart the server"


@cache
def current_installation() -> Installation:
    """How this copy was installed, read from its metadata and its environment's marker files."""
    prefix = Path(sys.prefix)
    try:
        dist = metadata.distribution(DIST)
        installer = (dist.read_text("INSTALLER") or "pip").strip()
        direct = json.loads(dist.read_text("direct_url.json") or "null")
    except (metadata.PackageNotFoundError, ValueError):
        installer, direct = "pip", None
    source, editable = _source(direct)
    kind: Installer
    if (prefix / "pipx_metadata.json").is_file():  # whether pipx ran pip or uv underneath (`runpip` does either)
        kind = "pipx"
    elif installer != "uv":
        kind = "pip"
    elif (prefix / "uv-receipt.toml").is_file():
        kind = "uv-tool"
    elif "archive-v0" in prefix.parts:  # uv's cache of ephemeral environments: uvx / uv tool run
        kind = "uvx"
    else:
        kind = "uv"
    return Installation(kind, source, editable, sys.executable)


def complete_extras() -> list[str]:
    """The extras whose every requirement is installed here (`all` alone when it is)."""
    try:
        requires = metadata.distribution(DIST).requires or []
    except metadata.PackageNotFoundError:
        return []
    needs: dict[str, list[tuple[str, list[str]]]] = {}
    for line in requires:
        requirement, _, marker = line.partition(";")
        extra = _EXTRA_MARKER.search(marker)
        name = _NAME.match(requirement)
        if extra and name:
            nested = [item.strip() for item in (name.group(2) or "").split(",") if item.strip()]
            needs.setdefault(extra.group(1), []).append((name.group(1), nested))

    def complete(extra: str, seen: frozenset[str] = frozenset()) -> bool:
        for name, nested in needs.get(extra, []):
            if _normal(name) == _normal(DIST):
                if any(item in seen or not complete(item, seen | {extra}) for item in nested):
                    return False
            elif not _installed(name):
                return False
        return extra in needs

    done = [extra for extra in needs if extra not in DEVELOPMENT_EXTRAS and complete(extra)]
    return ["all"] if "all" in done else done


def _installed(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _source(direct: dict[str, object] | None) -> tuple[str, bool]:
    """(what to install, editable) from a PEP 610 `direct_url.json`; the name when installed from an index."""
    if not isinstance(direct, dict) or not isinstance(direct.get("url"), str):
        return DIST, False
    url = str(direct["url"])
    info = direct.get("dir_info")
    if url.startswith("file://") and isinstance(info, dict):
        return unquote(urlsplit(url).path), bool(info.get("editable"))
    vcs = direct.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs"):
        return f"{DIST} @ {vcs['vcs']}+{url}", False
    return f"{DIST} @ {url}", False


def _spec(source: str, extras: list[str], editable: bool) -> str:
    """`'<dir>[a,b]'`, `'mcp-sections[a,b]'` or `'mcp-sections[a,b] @ <url>'`, quoted for the shell."""
    listed = f"[{','.join(extras)}]" if extras else ""
    if " @ " in source:
        name, _, url = source.partition(" @ ")
        text = f"{name}{listed} @ {url}"
    else:
        text = f"{source}{listed}"
    return ("-e " if editable else "") + shlex.quote(text)
