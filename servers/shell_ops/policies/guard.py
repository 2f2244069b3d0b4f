"""The command guard: turns a caller's command into a checked argv, or refuses it with an error code.

No shell is ever involved: a command is an argv list (or a string split with `shlex.split`), its program must be on the
allow-list and is resolved on a FIXED search path (never the caller's). The OS sandbox (shared/confinement/sandbox.py)
is the boundary: it confines whatever a program does to the roots, with no network. So the guard has two sets of rules,
and `check(..., confined=)` says which apply (servers/shell_ops/README.md, section 2, has the table with every reason):

Always (the OS cannot take their place):

1. Syntax (INVALID_INPUT): no empty command, no NUL, bounded sizes; in the string form no shell syntax (`;`, `|`, `&&`,
   `>`, `$(`, backticks, a line break outside quotes) and no leading `NAME=value` (variables go in `env`). Argv
   elements may hold line breaks: no shell reads them.
2. Program (PERMISSION_DENIED / NOT_FOUND): shells, wrappers that run another program (`env`, `xargs`, `sudo`,
   `timeout`, ...) and script-evaluating text tools (`awk`, `sed`, ...) are never allowed; otherwise the name must be
   on the allow-list (the operator's policy) and is resolved to an absolute executable: in the project environment of
   the working directory first (its venv's `bin`, its `node_modules/.bin`: shared/confinement/toolchains.py), then on
   the fixed search path — except the system programs (`SYSTEM_PROGRAMS`: the read-only tools and git, whose hardened
   probes run outside the sandbox), always the system's. A program given by a path inside the roots is the project's own
   and runs when `project_programs` is on; it must not lead (through links) to a never-allowed program, nor outside the
   roots anywhere but the system directories and the verified interpreter installations the sandbox shows. A
   wrapper's command (`uv run CMD`, `poetry run CMD`) is checked as a command of its own.
3. What the OS cannot confine: `cwd` inside the roots; git's repository options (`-C`, `--git-dir`, `--work-tree`)
   inside the roots, since the hardened probes run in that repository on the host; secrets named in git's history
   (`HEAD:.env`) or by name in the roots (`check_named`); the policies' `confined` rules (npm's and pnpm's wrapper
   subcommands). An installer (`shared.confinement.installers.installer_kind`) is marked: it gets the registry-only
   egress.

With the sandbox off (`confined=False`) the argument rules are the only layer, so every rule applies besides: each
program's full policy (`policy_for(...).check`, refusing flags that run code or write files: `python -c`, `find
-exec`, `git -c`, `sort -o`, ...), the option classes (option_classes.py: options that read paths from a file or follow
symbolic links are refused; base-directory options are confined and become a second place relative paths are checked
from), path confinement of every argument that looks like a path (contains `/`, is `.`/`..`, or names an entry that
exists in the working directory) and of every value attached to an option (`-qfFILE`, `--opt=value`, `name=value`),
the name-versus-program check of a program given by path, and no installer runs.

Long options are matched by unambiguous prefix too (`--outp=x` is `--output=x`, as getopt_long and git's
parse-options accept), and short-option clusters are scanned letter by letter (`-uo x` holds `-o`); both err on the
side of refusing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from mcp_sections.servers.shell_ops.policies.allow_list import (
    ALLOW_HINT,
    DEFAULT_ALLOWED_PROGRAMS,
    NEVER_ALLOWED,
    PROJECT_PROGRAMS_HINT,
    SEARCH_PATH_HINT,
    SYSTEM_PROGRAMS,
    check_allow_list,
)
from mcp_sections.servers.shell_ops.policies.option_classes import (
    attached_values,
    base_directories,
    check_refused_classes,
    class_refusals,
)
from mcp_sections.servers.shell_ops.policies.policy import PolicyContext, PolicyInfo
from mcp_sections.servers.shell_ops.policies.programs import policy_for
from mcp_sections.servers.shell_ops.policies.project_tools import (
    INSTALL_SENTENCE,
    split_poetry,
    split_uv,
    split_uv_confined,
)
from mcp_sections.servers.shell_ops.policies.syntax import CheckedCommand, denied, invalid, split_command
from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.confinement.installers import installer_kind
from mcp_sections.shared.confinement.sandbox import SYSTEM_DIRECTORIES
from mcp_sections.shared.confinement.toolchains import (
    ProjectToolchain,
    forbidden_prefixes,
    program_venv_prefixes,
    project_toolchain,
    trusted_interpreters,
)
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.ground.locations import is_inside
from mcp_sections.shared.ground.programs import DEFAULT_SEARCH_PATH

MAX_WRAPPED = 3  # `uv run uv run ...` nests at most this deep


class CommandGuard:
    """Checks commands against an allow-list, the search path and project environments, the policies and the path
    guard."""

    def __init__(
        self,
        path_guard: PathGuard,
        allowed_programs: Iterable[str],
        search_path: str = DEFAULT_SEARCH_PATH,
        *,
        project_programs: bool = True,
    ) -> None:
        self._paths = path_guard
        self._allowed = tuple(check_allow_list(allowed_programs))
        self._search_path = search_path
        self._project_programs = project_programs
        self._forbidden = forbidden_prefixes(path_guard)
        self._trusted = trusted_interpreters(search_path, self._forbidden)

    @property
    def allowed_programs(self) -> tuple[str, ...]:
        return self._allowed

    @property
    def search_path(self) -> str:
        return self._search_path

    @property
    def path_guard(self) -> PathGuard:
        return self._paths

    def executable(self, program: str) -> str | None:
        """The absolute executable of `program` on the fixed search path (None if not installed)."""
        return shutil.which(program, path=self._search_path)

    def toolchain(self, workdir: Path) -> ProjectToolchain:
        """The project environment of a command run in `workdir` (shared.confinement.toolchains)."""
        return project_toolchain(workdir, self._paths, self._forbidden, self._trusted)

    def base_toolchain(self) -> ProjectToolchain:
        """What every program gets outside a project environment: the verified interpreters of the search path."""
        return ProjectToolchain(readable=self._trusted)

    def resolve_program(self, program: str, workdir: Path | None = None) -> tuple[str, str]:
        """(name, absolute executable) of an allowed program, or PERMISSION_DENIED / NOT_FOUND."""
        name = self.allowed_name(program)
        workdir = workdir or self.resolve_cwd(None)
        return name, self.locate(program, name, workdir, self.toolchain(workdir))

    def allowed_name(self, program: str) -> str:
        """The program's name if it may run at all (PERMISSION_DENIED otherwise); nothing is looked up yet."""
        name = os.path.basename(program) if "/" in program else program
        if name in NEVER_ALLOWED:
            raise denied(
                f"{name!r} is never allowed: {NEVER_ALLOWED[name]}; no setting allows it. Run the program you need "
                "directly."
            )
        if name not in self._allowed:
            raise denied(
                f"{name[:60]!r} is not on the allow-list of programs; allowed: {', '.join(self._allowed)} "
                f"(see list_safe_commands). {ALLOW_HINT}"
            )
        return name

    def project_name(self, program: str) -> str:
        """The name of a program given by a path inside the roots (PERMISSION_DENIED when it may not run)."""
        name = os.path.basename(program)
        if name in NEVER_ALLOWED:
            raise denied(f"{program[:200]!r} is a {name!r}, which is never allowed: {NEVER_ALLOWED[name]}.")
        if name in SYSTEM_PROGRAMS:
            raise denied(
                f"{program[:200]!r}: {name!r} is always the system's own (found on the fixed search path); give the "
                f"bare name {name!r} instead."
            )
        if not self._project_programs:
            raise denied(
                f"{program[:200]!r} is a program inside the roots, and this server runs only allow-listed programs "
                f"by name (project_programs is off). To allow the project's own programs, {PROJECT_PROGRAMS_HINT}."
            )
        return name

    def is_project_path(self, program: str, workdir: Path) -> bool:
        """Whether `program` names a program by a path inside the roots (relative ones always do)."""
        if "/" not in program:
            return False
        if not os.path.isabs(program):
            return True
        parent = os.path.realpath(os.path.dirname(program))
        return self._paths.root_of(parent) is not None or self._paths.root_of(os.path.normpath(program)) is not None

    def locate(
        self, program: str, name: str, workdir: Path, toolchain: ProjectToolchain, *, confined: bool = False
    ) -> str:
        """The absolute executable: a path inside the roots as given, a system program on the fixed search path, any
        other name in the project environment first; an absolute `program` elsewhere must be exactly it."""
        if self.is_project_path(program, workdir):
            return self.checked_project_program(os.path.join(workdir, program), toolchain, confined=confined)
        search_path = self._search_path if name in SYSTEM_PROGRAMS else toolchain.search_path(self._search_path)
        executable = shutil.which(name, path=search_path)
        if "/" in program and (executable is None or os.path.realpath(program) != os.path.realpath(executable)):
            raise denied(
                f"{program[:200]!r} is not the allowed {name!r} from the project environment or the fixed search "
                f"path ({search_path}); give the bare name {name!r} instead."
            )
        if executable is None:
            hint = " (`python3` is)" if name == "python" and shutil.which("python3", path=search_path) else ""
            where = f"on the server's search path ({self._search_path})"
            if toolchain.path_entries and name not in SYSTEM_PROGRAMS:
                where = f"in the project environment ({', '.join(toolchain.path_entries)}) nor {where}"
            raise ToolFailure(
                ErrorCode.NOT_FOUND,
                f"{name!r} is allowed but not found {where}{hint}; {SEARCH_PATH_HINT}.",
            )
        if any(is_inside(os.path.dirname(executable), entry) for entry in toolchain.path_entries):
            return self.checked_project_program(executable, toolchain, confined=confined)
        return executable

    def program_toolchain(self, program: str, workdir: Path, toolchain: ProjectToolchain) -> ProjectToolchain:
        """`toolchain`, also showing the interpreter of the venv a program given by path lives in."""
        if not self.is_project_path(program, workdir):
            return toolchain
        path = Path(os.path.realpath(os.path.dirname(os.path.join(workdir, program)))) / os.path.basename(program)
        return toolchain.showing(program_venv_prefixes(path, self._paths, self._forbidden))

    def checked_project_program(self, path: str, toolchain: ProjectToolchain, *, confined: bool = False) -> str:
        """`path` (absolute, as named) if it is an executable file inside the roots whose real file is neither a
        never-allowed program nor outside everything the sandbox shows (the roots, the system directories, the
        verified interpreter installations); with the sandbox off, also the program its name says (its arguments are
        checked by the policy of that name)."""
        shown = self._paths.relative(path) if self._paths.root_of(os.path.normpath(path)) else path
        folder = self._paths.resolve(os.path.dirname(os.path.normpath(path)), purpose="list")  # inside, not denied
        entry = folder / os.path.basename(path)
        if self._paths.is_denied_name(entry.name) or self._paths.is_denied(str(entry)):
            raise denied(f"{shown[:200]!r} matches a protected pattern (secrets are never run nor read).")
        real = os.path.realpath(entry)
        if not os.path.isfile(real) or not os.access(real, os.X_OK):
            raise ToolFailure(
                ErrorCode.NOT_FOUND if not os.path.lexists(entry) else ErrorCode.PERMISSION_DENIED,
                f"{shown[:200]!r} is not an executable file; check the path (make it executable with "
                "`chmod +x` if it is a script with a `#!` line).",
            )
        target = os.path.basename(real)
        if target in NEVER_ALLOWED:
            raise denied(f"{shown[:200]!r} leads to {real!r}, which is never allowed: {NEVER_ALLOWED[target]}.")
        if self._paths.root_of(real) is not None:
            self._paths.resolve(real, purpose="execute")  # not the own state, not a protected file
            return str(entry)
        if not (any(is_inside(real, system) for system in SYSTEM_DIRECTORIES) or toolchain.shows(real)):
            raise denied(
                f"{shown[:200]!r} leads outside the roots to {real!r}, which the sandbox does not show (only the "
                "system directories and verified interpreter installations are); run a program inside the roots or "
                "an allowed program by name."
            )
        named, runs = policy_for(entry.name), policy_for(target)
        # `.venv/bin/pytest` → python3: `pytest -c CODE` would be `python3 -c CODE` (a rule of the sandbox-off layer)
        if not confined and named.name != runs.name:
            raise denied(
                f"{shown[:200]!r} leads to {real!r}, another program than its name says (its arguments would be "
                f"checked by the {named.name} policy, not the {runs.name} one); run {target!r} by its own name."
            )
        return str(entry)

    def resolve_cwd(self, cwd: str | None) -> Path:
        """The checked real working directory (default: the first root)."""
        if not self._paths.roots:
            raise self._paths_failure()
        if cwd is None or cwd.strip() in ("", "."):
            return self._paths.roots[0]
        path = self._paths.resolve(cwd, purpose="list")
        if not path.is_dir():
            raise invalid(f"cwd {cwd[:200]!r} is not a directory.")
        return path

    def _paths_failure(self) -> ToolFailure:
        return denied(
            "no allowed roots are configured, so no command can run; start the server with `--root DIR` "
            "(repeatable) or set MCP_SECTIONS_ROOTS."
        )

    def confine(self, value: str, cwd: Path) -> Path:
        """A path argument, relative to `cwd`, checked inside the roots (existing or not)."""
        candidate = value if os.path.isabs(value) else os.path.join(cwd, value)
        return self._paths.resolve(candidate, purpose="create")

    def check(self, command: str | Sequence[str], cwd: str | None = None, *, confined: bool = False) -> CheckedCommand:
        """The checked command, or a ToolFailure (INVALID_INPUT / PERMISSION_DENIED / NOT_FOUND).

        `confined`: the OS sandbox confines the program (bubblewrap, Seatbelt), so only the rules it cannot take the
        place of apply (the module docstring lists both sets); False: every rule, the only layer."""
        argv = split_command(command)
        workdir = self.resolve_cwd(cwd)
        return self._check(argv, workdir, self.toolchain(workdir), depth=0, confined=confined)

    def _check(
        self, argv: list[str], workdir: Path, toolchain: ProjectToolchain, depth: int, *, confined: bool
    ) -> CheckedCommand:
        project = self.is_project_path(argv[0], workdir)
        name = self.project_name(argv[0]) if project else self.allowed_name(argv[0])
        info = policy_for(name)
        ctx = PolicyContext(
            program=name,
            cwd=workdir,
            confine=lambda value: self.confine(value, workdir),
            denied=self._paths.is_denied_relative,
            node_bin=toolchain.node_bin,
        )
        installer = installer_kind(info.name, argv[1:])
        if confined:
            args = self._confined_args(name, argv, workdir, info, ctx)
        else:
            if installer is not None:
                raise denied(
                    f"{' '.join([name, *argv[1:3]])[:60]} installs from a registry, which needs the OS sandbox's "
                    f"registry-only egress; with the sandbox off, commands get no installs. {INSTALL_SENTENCE}"
                )
            args = self._checked_args(name, argv, workdir, info, ctx)
        inner = self._wrapped(info.name, argv[1:], confined)
        if inner is not None:
            if depth >= MAX_WRAPPED:
                raise denied(f"{name} run is nested too deeply; run the command itself.")
            self._check(inner, workdir, toolchain, depth + 1, confined=confined)  # checked as a command of its own
        toolchain = self.program_toolchain(argv[0], workdir, toolchain)
        executable = self.locate(argv[0], name, workdir, toolchain, confined=confined)  # last: refused where missing
        return CheckedCommand(
            program=name,
            executable=executable,
            args=tuple(args),
            cwd=workdir,
            policy=info.name,
            toolchain=toolchain,
            project_program=project,
            installer=installer,
        )

    def _confined_args(
        self, name: str, argv: list[str], workdir: Path, info: PolicyInfo, ctx: PolicyContext
    ) -> list[str]:
        """Inside the sandbox: the program's remaining rules, git's repository options confined (its hardened probes
        run outside), and no argument naming a protected file."""
        args = info.confined(list(argv[1:]), ctx) if info.confined is not None else list(argv[1:])
        bases = [workdir]
        if name == "git":  # git's hardened probes run outside the sandbox, in the repository these options name
            for value in base_directories(name, argv[1:]):
                bases.append(self.confine(value, bases[-1]))
        for arg in argv[1:]:
            for value in path_candidates(arg, workdir):
                self.check_named(value, workdir)
        return args

    def _checked_args(
        self, name: str, argv: list[str], workdir: Path, info: PolicyInfo, ctx: PolicyContext
    ) -> list[str]:
        """With the sandbox off: every rule of the program's policy and its option classes, and every path-like
        argument confined to the roots from each base directory the program would use."""
        assert info.check is not None
        args = info.check(list(argv[1:]), ctx)
        check_refused_classes(name, argv[1:])
        bases = [workdir]
        for value in base_directories(name, argv[1:]):  # each relative to the one before, as the program does
            bases.append(self.confine(value, bases[-1]))
        for base in dict.fromkeys(bases):
            for arg in argv[1:]:
                for value in path_candidates(arg, base):
                    self.confine(value, base)
        return args

    @staticmethod
    def _wrapped(family: str, args: Sequence[str], confined: bool) -> list[str] | None:
        """The command a wrapper program runs (`uv run CMD`, `poetry run CMD`), checked against the allow-list."""
        if family == "uv":
            return (split_uv_confined(args) if confined else split_uv(args)).inner
        if family == "poetry" and confined:
            return split_poetry(args).inner
        return None

    def check_named(self, value: str, cwd: Path) -> None:
        """Inside the sandbox: an argument naming an existing protected file (`.env`, a key) or the suite's own state
        inside the roots is refused. The sandbox hides both (an empty file or directory); the refusal says so plainly
        instead of a program reading an empty `.env`, and holds in the moment after a protected file is created in a
        large root, before the background walk hides it. Paths outside the roots are the sandbox's to hide."""
        candidate = os.path.normpath(os.path.join(cwd, os.path.expanduser(value)))
        if not os.path.lexists(candidate):
            return
        real = os.path.realpath(candidate)
        if any(is_inside(path, str(private)) for path in (real, candidate) for private in self._paths.private):
            self._paths.resolve(candidate, purpose="list")  # PERMISSION_DENIED: the own state
        inside = [path for path in (candidate, real) if self._paths.root_of(path) is not None]
        named = self._paths.is_denied_name(os.path.basename(candidate))
        if inside and (named or any(map(self._paths.is_denied, inside))):
            shown = self._paths.relative(inside[0])
            raise denied(
                f"{shown[:200]!r} matches a protected pattern (secrets such as .env files and keys are never read by "
                "programs: the sandbox shows them empty); choose another file."
            )

    def describe(self, *, confined: bool = False) -> list[dict[str, object]]:
        """The allow-list with each program's executable and policy (for list_safe_commands): what remains inside the
        sandbox when `confined`, every refusal otherwise."""
        rows: list[dict[str, object]] = []
        for program in self._allowed:
            info = policy_for(program)
            rows.append(
                {
                    "program": program,
                    "executable": self.executable(program),
                    "why_allowed": DEFAULT_ALLOWED_PROGRAMS.get(program, "added by the server's operator"),
                    "policy": info.remains if confined else info.summary,
                    "refused": [] if confined else [*info.refused, *class_refusals(program)],
                }
            )
        return rows


def path_candidates(arg: str, cwd: Path) -> list[str]:
    """The parts of an argument that may name a file and are therefore confined to the roots: the argument
    itself unless it is an option, and every value attached to it (option_classes.attached_values)."""
    values = attached_values(arg)
    if not arg.startswith("-") and arg:
        values.insert(0, arg)
    return [value for value in values if looks_like_path(value, cwd)]


def looks_like_path(value: str, cwd: Path) -> bool:
    """Whether a value may name a file: it has a `/`, is `.`/`..`, or names an existing entry of `cwd`."""
    if any(len(part.encode("utf-8", "surrogatepass")) > 255 for part in value.split("/")) or len(value) > 4096:
        return False  # no file system accepts it as a path: a message or a pattern, not a file
    if "/" in value or value in (".", "..") or value.startswith("~"):
        return True
    try:
        return os.path.lexists(os.path.join(cwd, value))
    except (OSError, ValueError):
        return False
