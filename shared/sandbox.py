"""Confinement by the operating system for the programs the suite runs (shell_ops' commands and git).

Argument policies cannot know everything `git`, `sort` or `python3` will do with their arguments, and a script an
agent wrote with file_ops can do anything. So every program runs inside a bubblewrap sandbox whose view of the
file system is: the system directories read-only (`/usr`, `/bin`, `/lib*`, a few files of `/etc`, and the
install prefix of the program itself when it lives elsewhere), the allowed roots (writable only where the
section may write), a private `/tmp`, a private `/proc` and a minimal `/dev`; nothing else exists there: not
the home directory, not the server's data directory, not `/root`. It has no network unless asked, a fresh
PID namespace, its own session (no terminal injection), and it dies with the server.

`Sandbox.detect(mode)` fails closed: mode "auto" needs a bubblewrap that can create its namespaces (a probe
run once per process) and otherwise refuses every command with DEPENDENCY_ERROR saying how to install one;
only an explicit mode "off" runs programs unconfined, and then every result carries a warning. macOS
(`sandbox-exec`) is not implemented yet: "auto" refuses there too.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from mcp_sections.shared.errors import ErrorCode, ToolFailure
from mcp_sections.shared.programs import DEFAULT_SEARCH_PATH

Mode = Literal["auto", "bubblewrap", "off"]

SYSTEM_DIRECTORIES = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_ENTRIES = (
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "passwd",
    "group",
    "nsswitch.conf",
    "localtime",
    "mime.types",
    "gitattributes",
    "hosts",
    "resolv.conf",
)
UNCONFINED_WARNING = (
    "sandbox is off (sandbox = 'off' in this section's settings): this program ran with the server's own file-system "
    "and network access, confined only by argument rules"
)
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`) and "
    "make sure unprivileged user namespaces are enabled; inside a container that is itself the sandbox, set "
    "[sections.{section}] sandbox = 'off' explicitly"
)


@dataclass(frozen=True)
class Confinement:
    """What one program may see: directories it may write, directories it may only read, the network."""

    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    network: bool = False


@dataclass(frozen=True)
class Sandbox:
    """How programs are confined in this process: by bubblewrap, or not at all (mode "off")."""

    kind: Literal["bubblewrap", "off"]
    executable: str | None = None
    reason: str = field(default="")

    @property
    def warning(self) -> str | None:
        return UNCONFINED_WARNING if self.kind == "off" else None

    def result_fields(self) -> dict[str, str | None]:
        """What every command result says about its confinement."""
        return {"sandbox": self.kind, "warning": self.warning}

    def describe(self) -> dict[str, object]:
        """For list_safe_commands and environment reports."""
        return {"kind": self.kind, "executable": self.executable, "warning": self.warning, "why": self.reason}

    def wrap(self, argv: Sequence[str], cwd: Path, confinement: Confinement) -> list[str]:
        """The command line that runs `argv` (argv[0] absolute) in `cwd` inside the sandbox."""
        if self.kind == "off":
            return list(argv)
        assert self.executable is not None
        args = [self.executable, "--die-with-parent", "--new-session", "--unshare-all"]
        if confinement.network:
            args.append("--share-net")
        for directory in SYSTEM_DIRECTORIES:
            args += ["--ro-bind-try", directory, directory]
        for entry in ETC_ENTRIES:
            args += ["--ro-bind-try", f"/etc/{entry}", f"/etc/{entry}"]
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        for prefix in install_prefixes(argv[0]):  # after /tmp's tmpfs, which would hide a prefix under /tmp
            args += ["--ro-bind", prefix, prefix]
        for path in confinement.readable:
            args += ["--ro-bind", str(path), str(path)]
        for path in confinement.writable:
            args += ["--bind", str(path), str(path)]
        args += ["--chdir", str(cwd), "--", *argv]
        return args


def install_prefixes(executable: str) -> list[str]:
    """Read-only directories a program outside the system directories needs: its install prefix (/opt/node for
    /opt/node/bin/node), for the path it is called by and for the file that path leads to (a virtual
    environment's `bin/python3` links to an interpreter elsewhere). A prefix that would be a home directory
    or `/` is narrowed to the program's own directory."""
    found = []
    for path in (os.path.abspath(executable), os.path.realpath(executable)):
        if any(path == d or path.startswith(d + "/") for d in SYSTEM_DIRECTORIES):
            continue
        parent = os.path.dirname(path)
        prefix = os.path.dirname(parent) if os.path.basename(parent) == "bin" else parent
        if prefix in ("/", os.path.expanduser("~")) or prefix.count("/") < 2:
            prefix = parent
        if prefix not in found:
            found.append(prefix)
    return found


@functools.cache
def _bubblewrap_problem(executable: str) -> str | None:
    """Why this bubblewrap cannot confine programs here (None: it can); probed once per process."""
    try:
        probe = subprocess.run(
            [executable, "--die-with-parent", "--unshare-all", "--ro-bind", "/", "/", "true"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not run: {exc}"
    if probe.returncode != 0:
        return f"bubblewrap cannot create its namespaces here: {probe.stderr.strip()[:200]}"
    return None


def bubblewrap_problem(executable: str | None = None) -> str | None:
    """Why bubblewrap (found on the fixed search path unless given) cannot confine programs here (None: it can)."""
    executable = executable or shutil.which("bwrap", path=DEFAULT_SEARCH_PATH)
    return "bubblewrap (bwrap) is not installed" if executable is None else _bubblewrap_problem(executable)


def detect(mode: Mode, section: str = "shell_ops") -> Sandbox:
    """The sandbox of `mode`: never silently unconfined (see the module docstring)."""
    if mode == "off":
        return Sandbox("off", reason="configured off")
    if not sys.platform.startswith("linux"):
        raise ToolFailure(
            ErrorCode.DEPENDENCY_ERROR,
            f"no sandbox is available on {sys.platform} yet (bubblewrap is Linux-only); set "
            f"[sections.{section}] sandbox = 'off' to run programs unconfined, at your own risk.",
        )
    executable = shutil.which("bwrap", path=DEFAULT_SEARCH_PATH)
    problem = bubblewrap_problem(executable)
    if problem is not None:
        raise ToolFailure(
            ErrorCode.DEPENDENCY_ERROR,
            f"programs run only inside a sandbox, but {problem}; {INSTALL_HINT.format(section=section)}.",
        )
    return Sandbox("bubblewrap", executable, reason="bubblewrap with user namespaces")
