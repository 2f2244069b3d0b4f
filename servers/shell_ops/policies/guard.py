"""The command guard: turns a caller's command into a checked argv, or refuses it with an error code.

No shell is ever involved: a command is an argv list (or a string split with `shlex.split`), its program
must be on the allow-list and is resolved on a FIXED search path (never the caller's), and each program
has an argument policy that refuses the flags that would run code or write files outside the project.

Rules, in the order they are applied:

1. Syntax (INVALID_INPUT): no empty command, no NUL or newline in any argument, no shell syntax
   (`;`, `|`, `&&`, `>`, `$(`, backticks, ...) since nothing would interpret it, no leading
   `NAME=value` environment assignment (the child environment is fixed).
2. Program (PERMISSION_DENIED / NOT_FOUND): shells, wrappers that run another program (`env`, `xargs`,
   `sudo`, `timeout`, `nice`, ...) and script-evaluating text tools (`awk`, `sed`, ...) are never
   allowed, whatever the configuration says; otherwise the name must be on the allow-list and is
   resolved on the fixed search path to an absolute executable. An absolute program path is accepted
   only if it is exactly that resolved executable; relative program paths (`./x`) are refused.
   An allowed program that is not installed on the search path is NOT_FOUND.
3. Arguments (PERMISSION_DENIED): the program's policy (below; `policy_summaries()` describes them all),
   then the option classes (option_classes.py: options that read paths from a file or follow symbolic links
   are refused; base-directory options such as `git -C` are confined and become a second place relative paths
   are checked from), then path confinement: every argument that looks like a path (contains `/`, is `.`/`..`,
   or names an entry that exists in the working directory) and every value attached to an option (`-qfFILE`,
   `--opt=value`, `name=value`) that does, must resolve (symlinks followed) inside the roots, and must not
   match the path guard's deny globs.

Long options are matched by unambiguous prefix too (`--outp=x` is `--output=x`, as getopt_long and
git's parse-options accept), and short-option clusters are scanned letter by letter (`-uo x` holds
`-o`); both err on the side of refusing.

This guard is the second layer. The first is the OS sandbox every program runs in (shared/sandbox.py): it sees
only the roots and the system directories, so a project's own code (`make`, `npm test`, `pytest`, `python3
script.py`) and files a recursive tool reaches by itself cannot leave the roots either. What the guard adds:
refusals with a precise message before anything runs, deny globs for protected files inside the roots (which
the sandbox does not hide), and the same rules where an operator set `sandbox = "off"`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from mcp_sections.servers.shell_ops.policies.allow_list import DEFAULT_ALLOWED_PROGRAMS, NEVER_ALLOWED, check_allow_list
from mcp_sections.servers.shell_ops.policies.option_classes import (
    attached_values,
    base_directories,
    check_refused_classes,
    class_refusals,
)
from mcp_sections.servers.shell_ops.policies.policy import PolicyContext
from mcp_sections.servers.shell_ops.policies.programs import policy_for
from mcp_sections.servers.shell_ops.policies.syntax import CheckedCommand, denied, invalid, split_command
from mcp_sections.shared.errors import ErrorCode, ToolFailure
from mcp_sections.shared.guards.paths import PathGuard
from mcp_sections.shared.programs import DEFAULT_SEARCH_PATH


class CommandGuard:
    """Checks commands against an allow-list, a fixed search path, the policies and the path guard."""

    def __init__(
        self, path_guard: PathGuard, allowed_programs: Iterable[str], search_path: str = DEFAULT_SEARCH_PATH
    ) -> None:
        self._paths = path_guard
        self._allowed = tuple(check_allow_list(allowed_programs))
        self._search_path = search_path

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

    def resolve_program(self, program: str) -> tuple[str, str]:
        """(name, absolute executable) of an allowed program, or PERMISSION_DENIED / NOT_FOUND."""
        name = self.allowed_name(program)
        return name, self.locate(program, name)

    def allowed_name(self, program: str) -> str:
        """The program's name if it may run at all (PERMISSION_DENIED otherwise); nothing is looked up yet."""
        name = os.path.basename(program) if "/" in program else program
        if name in NEVER_ALLOWED:
            raise denied(f"{name!r} is never allowed: {NEVER_ALLOWED[name]}. Run the program you need directly.")
        if name not in self._allowed:
            raise denied(
                f"{name[:60]!r} is not on the allow-list of programs; allowed: {', '.join(self._allowed)} "
                "(see list_safe_commands). The allow-list is set by the server's operator."
            )
        if "/" in program and not os.path.isabs(program):
            raise denied(f"{program[:200]!r} is a relative program path; give the bare name {name!r} instead.")
        return name

    def locate(self, program: str, name: str) -> str:
        """The absolute executable on the fixed search path; an absolute `program` must be exactly it."""
        executable = self.executable(name)
        if "/" in program and (executable is None or os.path.realpath(program) != os.path.realpath(executable)):
            raise denied(
                f"{program[:200]!r} is not the allowed {name!r} from the fixed search path ({self._search_path}); "
                f"give the bare name {name!r} instead."
            )
        if executable is None:
            raise ToolFailure(
                ErrorCode.NOT_FOUND,
                f"{name!r} is allowed but not installed on the server's search path ({self._search_path}).",
            )
        return executable

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

    def check(self, command: str | Sequence[str], cwd: str | None = None) -> CheckedCommand:
        """The checked command, or a ToolFailure (INVALID_INPUT / PERMISSION_DENIED / NOT_FOUND)."""
        argv = split_command(command)
        name = self.allowed_name(argv[0])
        workdir = self.resolve_cwd(cwd)
        info = policy_for(name)
        ctx = PolicyContext(
            program=name,
            cwd=workdir,
            confine=lambda value: self.confine(value, workdir),
            denied=self._paths.is_denied_relative,
        )
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
        executable = self.locate(argv[0], name)  # last: a refused command is refused even where not installed
        return CheckedCommand(program=name, executable=executable, args=tuple(args), cwd=workdir, policy=info.name)

    def describe(self) -> list[dict[str, object]]:
        """The allow-list with each program's executable and policy (for list_safe_commands)."""
        rows: list[dict[str, object]] = []
        for program in self._allowed:
            info = policy_for(program)
            rows.append(
                {
                    "program": program,
                    "executable": self.executable(program),
                    "why_allowed": DEFAULT_ALLOWED_PROGRAMS.get(program, "added by the server's operator"),
                    "policy": info.summary,
                    "refused": [*info.refused, *class_refusals(program)],
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
