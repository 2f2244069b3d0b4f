"""The grammar of a command: splitting without a shell, refusing shell syntax, and reading options the way
getopt_long and git's parse-options do (unambiguous long prefixes, short-option clusters)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcp_sections.shared.confinement.toolchains import ProjectToolchain
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure


def words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


MAX_ARGUMENTS = 256
MAX_ARGUMENT_LENGTH = 8192
MAX_COMMAND_LENGTH = 65536
SHELL_OPERATORS = frozenset(
    {";", ";;", "|", "||", "|&", "&", "&&", ">", ">>", "<", "<<", "<<<", ">|", "&>", "&>>", "2>", "2>>", "2>&1", ">&"}
    | {"1>", "1>>"}
)
_SHELL_SUBSTITUTION = re.compile(r"\$\(|\$\{|`|<\(|>\(")
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
#: `>file`, `2>/dev/null`, `>>log`, `2>&1` as one argv element: a redirection that no shell will perform (`>=` and
#: `>>>` are operators of the program's own language, not redirections).
_REDIRECTION = re.compile(r"^(?:[0-9]?>>?|&>>?)[\w./~-]|^[0-9]?>&[0-9-]$")
_PUNCTUATION = ";&|<>"
_LINE_BREAKS = "\n\r"
_NO_SHELL_HINT = (
    "no shell is used to run commands, so shell syntax is not interpreted; pass the program and its "
    'arguments as an argv list (e.g. ["grep", "-n", "TODO", "src"]) and make one call per command.'
)


@dataclass(frozen=True)
class CheckedCommand:
    """A command that passed the guard: run `argv` (argv[0] absolute) in `cwd`, never through a shell."""

    program: str
    executable: str
    args: tuple[str, ...]
    cwd: Path
    policy: str
    toolchain: ProjectToolchain = field(default_factory=ProjectToolchain)
    """The project environment of `cwd`: its search-path entries, `VIRTUAL_ENV`, the interpreters to show."""
    project_program: bool = False
    """Given by a path inside the roots (the project's own program)."""
    installer: str | None = None
    """The installer it is (`shared.confinement.installers.installer_kind`): it runs with the registry-only egress."""

    @property
    def argv(self) -> list[str]:
        return [self.executable, *self.args]


def denied(message: str) -> ToolFailure:
    return ToolFailure(ErrorCode.PERMISSION_DENIED, message)


def invalid(message: str) -> ToolFailure:
    return ToolFailure(ErrorCode.INVALID_INPUT, message)


# -- step 1: syntax ------------------------------------------------------------------------------------


def split_command(command: str | Sequence[str]) -> list[str]:
    """The argv of a command given as a list or a string; INVALID_INPUT for anything that needs a shell.

    Line breaks: an argv element may hold them (a commit message, a multi-line `python -c`): no shell reads it. In the
    string form they are kept inside quotes; an unquoted one would separate two commands for a shell, so it is
    refused like `;`. NUL is refused everywhere: no argument of a program can hold one."""
    argv = _split_string(command) if isinstance(command, str) else _checked_list(command)
    if not argv or not argv[0].strip():
        raise invalid("the command is empty; give the program name and its arguments.")
    if len(argv) > MAX_ARGUMENTS:
        raise invalid(f"the command has {len(argv)} arguments; the limit is {MAX_ARGUMENTS}.")
    for arg in argv:
        if len(arg) > MAX_ARGUMENT_LENGTH:
            raise invalid(f"an argument is {len(arg)} characters long; the limit is {MAX_ARGUMENT_LENGTH}.")
    if _ENV_ASSIGNMENT.match(argv[0]):
        raise invalid(
            f"{argv[0].split('=', 1)[0]}=... is an environment assignment, and no shell interprets assignments; give "
            'the program name first and the variable in the tool\'s `env` argument (e.g. env={"PYTHONPATH": "src"}).'
        )
    return argv


def _split_string(command: str) -> list[str]:
    """A command string split into words as a shell would, once it holds no substitution, operator or unquoted
    line break."""
    if len(command) > MAX_COMMAND_LENGTH:
        raise invalid(f"the command is {len(command)} characters long; the limit is {MAX_COMMAND_LENGTH}.")
    _check_text(command, "the command")
    if _SHELL_SUBSTITUTION.search(command):
        raise invalid("the command contains `$(`, `${`, a backtick or a process substitution; " + _NO_SHELL_HINT)
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=_PUNCTUATION + _LINE_BREAKS)
        lexer.whitespace_split = True
        lexer.whitespace = " \t"
        tokens = list(lexer)
    except ValueError as exc:
        raise invalid(f"the command could not be split into arguments ({exc}); check its quoting.") from None
    # punctuation_chars splits unquoted operators into their own tokens; re-split without it for argv.
    if any(token and set(token) <= set(_LINE_BREAKS) for token in tokens):
        raise invalid(
            "the command has a line break outside quotes, which a shell would read as a second command; "
            + _NO_SHELL_HINT
            + " A line break inside an argument is fine: quote it, or use the argv list form."
        )
    if any(token and set(token) <= set(_PUNCTUATION + _LINE_BREAKS) for token in tokens):
        raise invalid("the command contains shell operators (`;`, `|`, `&&`, `>`, ...); " + _NO_SHELL_HINT)
    try:
        return shlex.split(command)
    except ValueError as exc:
        raise invalid(f"the command could not be split into arguments ({exc}); check its quoting.") from None


def _checked_list(command: Sequence[str]) -> list[str]:
    """An argv list whose elements are strings without NUL, none of them a shell operator or a redirection."""
    argv = list(command)
    for index, arg in enumerate(argv):
        if not isinstance(arg, str):
            raise invalid(f"argument {index} is not a string; every argv element must be a string.")
        _check_text(arg, f"argument {index}")
    for arg in argv[1:]:  # `;` alone is find's `-exec ... ;` terminator
        if (arg in SHELL_OPERATORS and arg != ";") or _REDIRECTION.match(arg):
            raise invalid(f"argument {arg!r} is a shell operator; " + _NO_SHELL_HINT)
    return argv


def _check_text(text: str, what: str) -> None:
    if "\x00" in text:
        raise invalid(f"{what} contains a NUL byte; arguments cannot hold one.")


# -- option matching helpers ---------------------------------------------------------------------------


def long_name(arg: str) -> str | None:
    """`--name` of `--name` or `--name=value`; None for anything else (including `--`)."""
    if not arg.startswith("--") or arg == "--":
        return None
    return arg.split("=", 1)[0]


def matches_long(arg: str, flags: Iterable[str]) -> str | None:
    """The denied long flag `arg` spells, exactly or as an unambiguous-looking prefix (`--outp`)."""
    name = long_name(arg)
    if name is None or len(name) < 3:
        return None
    for flag in flags:
        if flag == name or (flag.startswith(name) and len(name) >= 4 and name not in _LEGIT_PREFIXES):
            return flag
    return None


#: Real options that are prefixes of refused ones (`git diff --text` is not `--textconv`, `git format-patch
#: --to` is not `--tool`, `npm ls --include` is not `--include-workspace-root`).
_LEGIT_PREFIXES = frozenset({"--text", "--to", "--include"})


def short_cluster(arg: str) -> str:
    """The letters of a short-option cluster (`-abc` → `abc`); '' for non-short arguments."""
    if len(arg) < 2 or arg[0] != "-" or arg[1] == "-":
        return ""
    return arg[1:]


def find_flag(args: Sequence[str], long_flags: Iterable[str] = (), short_flags: str = "") -> str | None:
    """The first argument that uses one of the flags (long by prefix, short anywhere in a cluster)."""
    long_flags = tuple(long_flags)
    for arg in args:
        if long_flags and (hit := matches_long(arg, long_flags)):
            return hit
        cluster = short_cluster(arg)
        if cluster and short_flags and any(letter in short_flags for letter in cluster):
            letter = next(letter for letter in cluster if letter in short_flags)
            return f"-{letter}"
    return None
