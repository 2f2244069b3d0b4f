"""Confinement by the operating system for the programs the suite runs (shell_ops' commands and git).

Argument policies cannot know everything `git`, `sort` or `python3` will do with their arguments, and a script an
agent wrote with file_ops can do anything. So every program runs inside a bubblewrap sandbox whose view of the
file system is: the system directories read-only (`/usr`, `/bin`, `/lib*`, a few files of `/etc`, and the
install prefix of the program itself when it lives elsewhere), the allowed roots (writable only where the
section may write), a private `/tmp`, a private `/proc` and a minimal `/dev`; nothing else exists there: not
the home directory, not the server's data directory, not `/root`. When a root contains the suite's own
state (a root at the home directory holds the data, cache and config directories), that state is covered by
an empty tmpfs (a file by /dev/null), so a program cannot read or rewrite the audit log, the databases or the
settings that confine it. It has no network unless asked, a fresh
PID namespace, its own session (no terminal injection), no capabilities (even when the server runs as root),
and it dies with the server.

`Sandbox.detect(mode)` fails closed: mode "auto" needs a bubblewrap that can create its namespaces (a probe
run once per process) and otherwise refuses every command with DEPENDENCY_ERROR saying how to install one;
only an explicit mode "off" runs programs unconfined, and then every result carries a warning.

On macOS the same confinement comes from Seatbelt (`/usr/bin/sandbox-exec`, what Codex and Claude Code use
there) with a profile generated per command (`seatbelt_profile`): everything denied, then reads of the system
directories, the program's install prefix and the roots, writes only where the section may write (and the
per-user temporary directories: macOS has no private /tmp mount), no network unless asked. Seatbelt has no PID
namespace; the process group is still killed with the command. It is generated and unit-tested here, never run
on a Mac in CI (see the README).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.confinement.installations import is_node_installation, is_python_installation
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.ground.locations import is_inside, outermost
from mcp_sections.shared.ground.programs import DEFAULT_SEARCH_PATH

Mode = Literal["auto", "bubblewrap", "seatbelt", "off"]
Kind = Literal["bubblewrap", "seatbelt", "off"]
SANDBOX_EXEC = "/usr/bin/sandbox-exec"

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
    """What one program may see: directories it may write, directories it may only read, the network, and what keeps
    the suite's trusted base (`shared.confinement.trusted_base`) out of its reach inside them: what is hidden (the own
    state, the deny-listed files), the directories on the way to the base (pinned: bound onto themselves, a mount point
    cannot be renamed or removed), the directories whose own entries are fixed (those holding a link on the way, the
    home directory), and what is shown read-only inside a writable place (the suite's installation and launch files)."""

    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    network: bool = False
    hidden: tuple[Path, ...] = ()
    pinned: tuple[Path, ...] = ()
    protected: tuple[Path, ...] = ()  # inside a writable place, shown read-only (the suite's trusted base)
    egress: Path | None = None  # a Unix socket of an egress proxy (`shared.confinement.egress_proxy`): the only way out
    fixed: tuple[Path, ...] = ()  # bound read-only, their entries bound back writable: nothing added, renamed, removed
    state: tuple[Path, ...] = ()  # the own state wherever it is: hidden inside any place a bind shows

    @classmethod
    def within(
        cls,
        guard: PathGuard,
        *,
        writable: Sequence[Path] = (),
        readable: Sequence[Path] = (),
        network: bool = False,
        egress: Path | None = None,
    ) -> Confinement:
        """The confinement of a program working inside `guard`'s roots: the suite's own state and the deny-listed files
        (.env, keys, ~/.ssh: `shared.confinement.secrets.files`) in what it is shown are hidden, the trusted base inside
        the roots read-only, the way to it pinned."""
        from mcp_sections.shared.confinement.secrets.files import hidden_from_programs

        way = guard.way_inside_roots()
        return cls(
            writable=tuple(writable),
            readable=tuple(readable),
            network=network,
            hidden=hidden_from_programs(guard, (*writable, *readable)),
            pinned=way.pinned,
            protected=guard.protected_inside_roots(),
            egress=egress,
            fixed=way.fixed,
            state=guard.state_paths(),
        )

    def shows(self, path: str) -> bool:
        """Whether `path` (absolute) lies inside what this confinement binds."""
        return any(is_inside(path, os.fspath(place)) for place in (*self.writable, *self.readable))

    def in_writable(self, path: Path) -> bool:
        return any(is_inside(str(path), str(place)) for place in self.writable)


@dataclass(frozen=True)
class Sandbox:
    """How programs are confined in this process: by bubblewrap, or not at all (mode "off")."""

    kind: Kind
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

    @contextmanager
    def spawning(
        self, argv: Sequence[str], cwd: Path, confinement: Confinement, inside: Mapping[str, str] | None = None
    ) -> Iterator[Spawn]:
        """How to spawn `argv` confined — every spawn of a sandboxed program goes through here. With bubblewrap: the
        seccomp filter (`shared.confinement.seccomp`) and the variables `inside` (a caller's `env`) each in a descriptor
        the spawn passes on (`pass_fds`), closed when the block ends; the variables are set inside the sandbox only
        (`--setenv`, read from the descriptor: never on a command line others can read), so one that configures the
        dynamic loader (`LD_PRELOAD`) changes the program, never bubblewrap on the host. Otherwise they go in the
        spawned process's environment. bubblewrap refuses to start when a descriptor was not passed."""
        variables = dict(inside or {})
        if self.kind != "bubblewrap":
            yield Spawn(self.wrap(argv, cwd, confinement), (), variables)
            return
        from mcp_sections.shared.confinement.seccomp import filter_fd

        with filter_fd() as seccomp, _arguments_fd(_setenv(variables)) as extra:
            descriptors = (seccomp,) if extra is None else (seccomp, extra)
            yield Spawn(self.wrap(argv, cwd, confinement, seccomp_fd=seccomp, args_fd=extra), descriptors, {})

    def wrap(
        self,
        argv: Sequence[str],
        cwd: Path,
        confinement: Confinement,
        *,
        seccomp_fd: int | None = None,
        args_fd: int | None = None,
    ) -> list[str]:
        """The command line that runs `argv` (argv[0] absolute) in `cwd` inside the sandbox; for bubblewrap,
        `seccomp_fd` holds the seccomp filter and `args_fd` more arguments (`spawning` opens both per spawn)."""
        if self.kind == "off":
            return list(argv)
        assert self.executable is not None
        if self.kind == "seatbelt":
            return [self.executable, "-p", seatbelt_profile(argv[0], confinement), *argv]
        return self._bubblewrap(self.executable, argv, cwd, confinement, seccomp_fd, args_fd)

    def _bubblewrap(
        self,
        executable: str,
        argv: Sequence[str],
        cwd: Path,
        confinement: Confinement,
        seccomp_fd: int | None,
        args_fd: int | None,
    ) -> list[str]:
        """bubblewrap's command line: the system read-only, the confinement's binds, its fixed directories, pinned
        and protected paths, then what stays hidden over all of them; the egress bridge in front when it has one."""
        # --cap-drop ALL: bubblewrap started by root keeps every capability by default, and a program with
        # CAP_SYS_ADMIN could unmount what hides the suite's state, or mount a disk it made with CAP_MKNOD.
        # --seccomp: nothing it creates keeps a set-user-ID or set-group-ID bit (`shared.confinement.seccomp`)
        args = [executable, "--die-with-parent", "--new-session", "--unshare-all", "--cap-drop", "ALL"]
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        if args_fd is not None:
            args += ["--args", str(args_fd)]
        if confinement.network and confinement.egress is None:
            args.append("--share-net")
        args += _system_binds()
        prefixes = self._program_prefixes(argv[0], confinement)
        args += _confinement_binds(prefixes, confinement)
        fixed, bound, settled = _fixed_binds(confinement)
        args += fixed
        args += _pinned_binds(confinement, bound, settled)
        args += _protected_binds(confinement, settled)
        args += _hiding_binds(confinement, prefixes)
        if confinement.egress is not None:  # no network but loopback; the bridge leads to the proxy's socket
            args += ["--ro-bind", str(confinement.egress), EGRESS_SOCKET]
            args += ["--chdir", str(cwd), "--", *bridge_argv(argv)]
            return args
        args += ["--chdir", str(cwd), "--", *argv]
        return args

    @staticmethod
    def _program_prefixes(executable: str, confinement: Confinement) -> list[str]:
        """Install prefixes to show for a program that lives outside what the confinement binds: it was found on the
        trusted search path. A program inside the roots gets none: a link there is no reason to show a folder
        (interpreters it needs are verified by `shared.confinement.toolchains` and come in `readable`)."""
        return [] if confinement.shows(os.path.abspath(executable)) else install_prefixes(executable)


def _system_binds() -> list[str]:
    """The system directories and the /etc entries programs need, read-only; a fresh /proc, /dev and /tmp."""
    args: list[str] = []
    for directory in SYSTEM_DIRECTORIES:
        args += ["--ro-bind-try", directory, directory]
    for entry in ETC_ENTRIES:
        args += ["--ro-bind-try", f"/etc/{entry}", f"/etc/{entry}"]
    return [*args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]


def _confinement_binds(prefixes: list[str], confinement: Confinement) -> list[str]:
    """The program's install prefixes and the readable paths read-only, the writable ones writable."""
    args: list[str] = []
    for prefix in prefixes:  # after /tmp's tmpfs, which would hide them
        args += ["--ro-bind", prefix, prefix]
    for path in confinement.readable:
        args += ["--ro-bind", str(path), str(path)]
    for path in confinement.writable:
        args += ["--bind", str(path), str(path)]
    return args


def _fixed_binds(confinement: Confinement) -> tuple[list[str], set[str], list[str]]:
    """Each fixed directory read-only, its own entries bound back (writable, or read-only for the home's
    configuration and its targets); with the entries bound back (pinned already) and the paths made read-only with
    their directory (nothing inside them needs a mount of its own)."""
    args: list[str] = []
    bound: set[str] = set()
    settled: list[str] = []
    home = os.path.realpath(os.path.expanduser("~"))
    for fixed in confinement.fixed:  # its own entries cannot be added, renamed, removed or replaced
        if confinement.in_writable(fixed) and fixed.is_dir() and not fixed.is_symlink():
            writable, configuration, targets = _entries(fixed, home=str(fixed) == home)
            bound.update(writable)
            settled += configuration
            args += ["--ro-bind", str(fixed), str(fixed)]
            args += [arg for entry in writable for arg in ("--bind", entry, entry)]
            for target in targets:  # a dotfiles link's target is configuration too
                if confinement.in_writable(Path(target)) and not any(is_inside(target, s) for s in settled):
                    args += ["--ro-bind", target, target]
                    settled.append(target)
    return args, bound, settled


def _pinned_binds(confinement: Confinement, bound: set[str], settled: list[str]) -> list[str]:
    """The pinned directories the binds show writable, bound onto themselves: a mount point is never renamed nor
    removed from inside."""
    args: list[str] = []
    for path in confinement.pinned:
        if str(path) in bound or any(is_inside(str(path), place) for place in settled):
            continue
        if path.is_dir() and not path.is_symlink() and confinement.in_writable(path):
            args += ["--bind", str(path), str(path)]
    return args


def _protected_binds(confinement: Confinement, settled: list[str]) -> list[str]:
    """The protected paths read-only: readable, never written, renamed or replaced."""
    args: list[str] = []
    for path in confinement.protected:
        if path.exists() and not any(is_inside(str(path), place) for place in settled):
            args += ["--ro-bind", str(path), str(path)]
    return args


def _hiding_binds(confinement: Confinement, prefixes: list[str]) -> list[str]:
    """The hidden paths and the suite's state that the binds show, made empty over them (mounted last)."""
    places = [*map(str, confinement.writable), *map(str, confinement.readable), *prefixes]
    state = [path for path in confinement.state if any(is_inside(str(path), place) for place in places)]
    args: list[str] = []
    for path in map(Path, outermost(str(p) for p in (*confinement.hidden, *state))):  # hidden with the outer one
        if path.is_dir():  # read-only: a program cannot even stage files where the state seems to be
            args += ["--tmpfs", str(path), "--remount-ro", str(path)]
        elif path.exists():
            args += ["--ro-bind", "/dev/null", str(path)]
    return args


EGRESS_SOCKET = "/run/mcp-sections/egress.sock"  # where a sandbox finds the egress proxy's socket
EGRESS_PORT = 3128  # the loopback port the bridge listens on inside the sandbox's own network namespace


def bridge_argv(argv: Sequence[str]) -> list[str]:
    """`argv` behind the egress bridge (`shared.confinement.egress_bridge`), run by the system's Python in isolated
    mode."""
    from mcp_sections.shared.confinement.egress_bridge import source

    python = shutil.which("python3", path=DEFAULT_SEARCH_PATH) or "/usr/bin/python3"
    return [python, "-I", "-S", "-c", source(), EGRESS_SOCKET, str(EGRESS_PORT), "--", *argv]


def egress_environment() -> dict[str, str]:
    """What tells pip, npm and most HTTP clients to use the egress proxy inside the sandbox."""
    proxy = f"http://127.0.0.1:{EGRESS_PORT}"
    return {
        **{name: proxy for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY")},
        "npm_config_proxy": proxy,
        "npm_config_https_proxy": proxy,
        "NO_PROXY": "",
        "no_proxy": "",
    }


SEATBELT_READABLE = ("/usr", "/bin", "/sbin", "/System", "/Library", "/private/etc", "/private/var/db", "/dev")
SEATBELT_WRITABLE = ("/private/tmp", "/private/var/folders")  # macOS has no private /tmp: the user's temp dirs
SEATBELT_DEVICES = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/dtracehelper")


def seatbelt_profile(executable: str, confinement: Confinement) -> str:
    """A Seatbelt (SBPL) profile for one program: deny by default; read the system, the program's install prefix
    and the roots; write only `confinement.writable` and the temporary directories; network only if asked."""

    def paths(kind: str, entries: Sequence[str | Path]) -> str:
        return " ".join(f"({kind} {_sbpl_string(str(entry))})" for entry in entries)

    readable: list[str | Path] = [
        *SEATBELT_READABLE,
        *Sandbox._program_prefixes(executable, confinement),
        *confinement.readable,
        *confinement.writable,
    ]
    writable: list[str | Path] = [*confinement.writable, *SEATBELT_WRITABLE]
    rules = [
        "(version 1)",
        "(deny default)",
        "(allow process-exec process-fork signal)",
        "(allow sysctl-read mach-lookup ipc-posix-shm-read-data ipc-posix-shm-write-data ipc-posix-sem)",
        "(allow file-read-metadata)",  # stat() of path components, as every resolver needs
        '(allow file-read* (literal "/") (literal "/private") (literal "/private/var"))',
        f"(allow file-read* {paths('subpath', [*readable, *SEATBELT_WRITABLE])})",
        f"(allow file-write* {paths('subpath', writable)} {paths('literal', SEATBELT_DEVICES)})",
        f"(allow file-ioctl {paths('literal', SEATBELT_DEVICES)})",
    ]
    if confinement.network:
        rules.append("(allow network* system-socket)")
    if confinement.protected:  # the suite's own installation: readable, never written
        rules.append(f"(deny file-write* {paths('subpath', confinement.protected)})")
    if confinement.pinned:  # the way to the trusted base: never renamed, removed or replaced
        rules.append(f"(deny file-write* {paths('literal', confinement.pinned)})")
    if confinement.fixed:  # their own entries (a link on the way, a login file) never added, renamed or removed
        entries = " ".join(f"(regex {_sbpl_string('^' + re.escape(str(d)) + '/[^/]+$')})" for d in confinement.fixed)
        rules.append(f"(deny file-write-create file-write-unlink file-write-mode {entries})")
    hidden = [*confinement.hidden, *confinement.state]
    if hidden:  # the last matching rule wins: the suite's own state stays out of reach
        rules.append(f"(deny file-read* file-write* {paths('subpath', hidden)})")
    return "\n".join(rules) + "\n"


def _sbpl_string(text: str) -> str:
    """A path as an SBPL string literal: backslashes and quotes escaped, nothing else can end it."""
    if any(ord(char) < 32 for char in text):
        raise ValueError(f"a path with control characters cannot go into a sandbox profile: {text!r}")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


INSTALL_LAYOUT = ("bin", "lib", "lib64", "libexec")


def install_prefixes(executable: str) -> list[str]:
    """Read-only directories a program outside the system directories needs: its install prefix (/opt/node for
    /opt/node/bin/node), for the path it is called by and for the file that path leads to (a virtual
    environment's `bin/python3` links to an interpreter elsewhere). A prefix that would be a home directory
    or `/` is narrowed to the program's own directory. A prefix inside the home directory that is not an interpreter
    installation (`~/.local` of `~/.local/bin/uv`, `~/.cargo` of `~/.cargo/bin/cargo`) is narrowed to its install
    layout (`bin`, `lib`, `lib64`, `libexec`): `~/.local/share` holds the suite's data and other programs' keyrings,
    `~/.cargo` the registry's credentials."""
    home = os.path.realpath(os.path.expanduser("~"))
    found: list[str] = []
    for path in (os.path.abspath(executable), os.path.realpath(executable)):
        if any(path == d or path.startswith(d + "/") for d in SYSTEM_DIRECTORIES):
            continue
        parent = os.path.dirname(path)
        prefix = os.path.dirname(parent) if os.path.basename(parent) == "bin" else parent
        if prefix in ("/", os.path.expanduser("~"), home) or prefix.count("/") < 2:
            prefix = parent
        places = [prefix]
        installation = is_python_installation(Path(prefix)) or is_node_installation(Path(prefix))
        if prefix != parent and is_inside(os.path.realpath(prefix), home) and not installation:
            places = [parent, *(os.path.join(prefix, name) for name in INSTALL_LAYOUT[1:])]
            places = [place for place in places if place == parent or os.path.isdir(place)]
        found += [place for place in places if place not in found]
    return found


@dataclass(frozen=True)
class Spawn:
    """A confined program ready to spawn: its command line, the descriptors the child must keep (`pass_fds`), and the
    variables to add to the spawned process's own environment (none with bubblewrap: they are set inside)."""

    argv: list[str]
    pass_fds: tuple[int, ...] = ()
    environment: dict[str, str] = field(default_factory=dict)


def _setenv(variables: Mapping[str, str]) -> list[str]:
    return [arg for name, value in variables.items() for arg in ("--setenv", name, value)]


@contextmanager
def _arguments_fd(arguments: Sequence[str]) -> Iterator[int | None]:
    """A descriptor holding `arguments`, NUL-separated, from its start (bubblewrap's `--args FD`): an anonymous file,
    so that no size blocks the writer; None when there are none."""
    if not arguments:
        yield None
        return
    descriptor = os.memfd_create("mcp-sections-args", os.MFD_CLOEXEC)
    try:
        os.write(descriptor, b"".join(arg.encode("utf-8", "surrogateescape") + b"\0" for arg in arguments))
        os.lseek(descriptor, 0, os.SEEK_SET)
        yield descriptor
    finally:
        os.close(descriptor)


def _entries(directory: Path, *, home: bool) -> tuple[list[str], list[str], list[str]]:
    """What of a fixed directory stays the program's to change (its directories and regular files, bound back onto
    themselves, writable) and what is configuration, read-only: in the home directory, its hidden entries (`.config`,
    `.local`, `.bashrc`: what decides the user's next login and how the suite is launched; programs get a private HOME
    of their own) — and the real targets of those that are links (a dotfiles `~/.config`)."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return [], [], []
    writable: list[str] = []
    configuration: list[str] = []
    targets: list[str] = []
    for entry in entries:
        if home and entry.name.startswith("."):
            configuration.append(entry.path)
            if entry.is_symlink():
                targets.append(os.path.realpath(entry.path))
        elif entry.is_dir(follow_symlinks=False) or entry.is_file(follow_symlinks=False):
            writable.append(entry.path)
    return writable, configuration, targets


@functools.cache
def _bubblewrap_problem(executable: str) -> str | None:
    """Why this bubblewrap cannot confine programs here (None: it can); probed once per process, with the seccomp
    filter (a kernel without seccomp filters, or an architecture without one, fails here, closed)."""
    from mcp_sections.shared.confinement.seccomp import filter_fd, filter_problem

    if (problem := filter_problem()) is not None:
        return problem
    try:
        with filter_fd() as descriptor:
            seccomp = ["--seccomp", str(descriptor)]
            probe = subprocess.run(
                [executable, "--die-with-parent", "--unshare-all", *seccomp, "--ro-bind", "/", "/", "true"],
                capture_output=True,
                text=True,
                timeout=10,
                pass_fds=(descriptor,),
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


def detect(mode: Mode, section: str = "<section>") -> Sandbox:
    """The sandbox of `mode`: never silently unconfined (see the module docstring). `section` (the caller's id) is named
    in the messages that say how to change its setting."""
    if mode == "off":
        return Sandbox("off", reason="configured off")
    if mode == "seatbelt" or (mode == "auto" and sys.platform == "darwin"):
        return _detect_seatbelt(section)
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


def sandbox_problem() -> str | None:
    """Why `auto` cannot confine programs on this machine (None: it can): Seatbelt on macOS, bubblewrap elsewhere."""
    try:
        detect("auto")
    except ToolFailure as failure:
        return failure.message.split("; ", 1)[0].removeprefix("programs run only inside a sandbox, but ")
    return None


def _detect_seatbelt(section: str) -> Sandbox:
    problem = None
    if not os.access(SANDBOX_EXEC, os.X_OK):
        problem = f"{SANDBOX_EXEC} is not available (Seatbelt is macOS-only)"
    else:
        probe = subprocess.run(
            [SANDBOX_EXEC, "-p", seatbelt_profile("/usr/bin/true", Confinement()), "/usr/bin/true"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        if probe.returncode != 0:
            problem = f"sandbox-exec refused the generated profile: {probe.stderr.strip()[:200]}"
    if problem is not None:
        raise ToolFailure(
            ErrorCode.DEPENDENCY_ERROR,
            f"programs run only inside a sandbox, but {problem}; set [sections.{section}] sandbox = 'off' to run "
            "them unconfined, at your own risk.",
        )
    return Sandbox("seatbelt", SANDBOX_EXEC, reason="Seatbelt (sandbox-exec) with a generated profile")
