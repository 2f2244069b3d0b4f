"""What an argument policy is: a function from (arguments, context) to the checked arguments, or a refusal.

Each program has two: `check`, every rule, applied when nothing else confines the program (`sandbox = "off"`: the
argument rules are the only layer), and `confined`, the few rules the OS sandbox cannot make unnecessary, applied when
it confines the program (None: none remain). `remains` says which remain and why (list_safe_commands, the README).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcp_sections.servers.shell_ops.policies.syntax import denied, find_flag


@dataclass(frozen=True)
class PolicyContext:
    """What a policy may use: the working directory and the path confinement check."""

    program: str
    cwd: Path
    confine: Callable[[str], Path]
    denied: Callable[[str], bool] = lambda relative: False
    """Whether a path relative to a repository or root matches the deny globs (`HEAD:.env` names one)."""
    node_bin: Path | None = None
    """The project's `node_modules/.bin` for a command in `cwd` (shared.confinement.toolchains), if any."""


Policy = Callable[[list[str], PolicyContext], list[str]]


@dataclass(frozen=True)
class PolicyInfo:
    name: str
    summary: str
    refused: tuple[str, ...] = ()
    """What `check` refuses (with the sandbox off)."""
    check: Policy | None = field(default=None, repr=False)
    remains: str = "nothing: the sandbox confines whatever it does to the roots, with no network"
    """The rules that remain inside the sandbox, each with the reason the OS cannot take its place."""
    confined: Policy | None = field(default=None, repr=False)
    """The rules applied inside the sandbox (None: the arguments pass as given)."""


def _refuse_flags(program: str, long_flags: Sequence[str] = (), short_flags: str = "", why: str = "") -> Policy:
    def check(args: list[str], ctx: PolicyContext) -> list[str]:
        if hit := find_flag(args, long_flags, short_flags):
            raise denied(f"{program} {hit} is refused by the command policy ({why}).")
        return args

    return check
