"""Inputs and outputs of the shell_ops tools."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from mcp_sections.shared.tools import ToolInput, ToolResult

CWD_DESCRIPTION = (
    "Working directory, inside the allowed roots (relative paths start at the first root). Default: the first root."
)
MAX_ARGUMENT_CHARS = 65536  # one argv item: as long as the whole string form of a command may be
PathText = Annotated[str, Field(max_length=4096)]  # PATH_MAX

TIMEOUT_DESCRIPTION = (
    "Seconds before the whole process group is killed (default and maximum are set by the server; "
    "a timeout is a TIMEOUT error carrying the last output)."
)


class RunCommandInput(ToolInput):
    command: (
        Annotated[list[Annotated[str, Field(max_length=MAX_ARGUMENT_CHARS)]], Field(min_length=1, max_length=256)]
        | Annotated[str, Field(min_length=1, max_length=MAX_ARGUMENT_CHARS)]
    ) = Field(
        description=(
            'The command as an argv list (preferred), e.g. ["git", "log", "-n", "5"], or one string split like a '
            "shell would split words (shlex) — but NO shell runs it: pipes, `;`, `&&`, redirections, `$(...)` and "
            "variables are refused. The program must be on the allow-list (see list_safe_commands)."
        ),
    )
    cwd: str | None = Field(default=None, description=CWD_DESCRIPTION, max_length=4096)
    timeout_seconds: float | None = Field(default=None, gt=0, le=86400, description=TIMEOUT_DESCRIPTION)


class CommandResult(ToolResult):
    exit_code: int = Field(description="The program's exit status; non-zero is a normal result, not a tool error.")
    stdout: str
    stderr: str
    duration_ms: int
    stdout_truncated: bool
    stderr_truncated: bool
    stdout_dropped_bytes: int = Field(description="Bytes cut from the middle of stdout (head and tail are kept).")
    stderr_dropped_bytes: int
    stopped_for_output: bool = Field(
        default=False,
        description="The program wrote more than the server's total output limit and was stopped there (exit code "
        "-9); narrow the command (head, a pattern, a path).",
    )
    executable: str = Field(description="The absolute program that ran (resolved on the server's fixed PATH).")
    args: list[str] = Field(description="Its arguments as run (hardening options git/npm receive are not shown).")
    cwd: str
    sandbox: Literal["bubblewrap", "seatbelt", "off"] = Field(description="How the program was confined by the OS.")
    warning: str | None = Field(default=None, description="Set when the program ran without an OS sandbox.")

    def render_text(self) -> str:
        head = f"exit {self.exit_code} in {self.duration_ms} ms ({self.executable} in {self.cwd})"
        if self.warning:
            head = f"WARNING: {self.warning}\n{head}"
        parts = [head]
        if self.stdout:
            parts.append("--- stdout ---\n" + self.stdout.rstrip("\n"))
        if self.stderr:
            parts.append("--- stderr ---\n" + self.stderr.rstrip("\n"))
        return "\n".join(parts)


class RunNpmScriptInput(ToolInput):
    script: str = Field(
        description="Name of a script in package.json (lifecycle hooks such as postinstall/prepare are refused).",
        min_length=1,
        max_length=100,
    )
    args: list[Annotated[str, Field(max_length=MAX_ARGUMENT_CHARS)]] = Field(
        default_factory=list,
        description="Extra arguments passed to the script after `--` (quoted by npm; no shell expansion).",
        max_length=64,
    )
    cwd: str | None = Field(
        default=None,
        description="Directory holding package.json, inside the roots. Default: the first root.",
        max_length=4096,
    )
    timeout_seconds: float | None = Field(default=None, gt=0, le=86400, description=TIMEOUT_DESCRIPTION)


class NpmScriptResult(CommandResult):
    script: str
    script_text: str = Field(description="The script's command line from package.json.")


class RepoInput(ToolInput):
    cwd: str | None = Field(
        default=None,
        description="A directory inside the repository (inside the roots). Default: the first root.",
        max_length=4096,
    )


class GitStatusInput(RepoInput):
    include_untracked: bool = Field(default=True, description="List untracked files.")
    include_ignored: bool = Field(default=False, description="List ignored files too.")
    max_entries: int = Field(default=500, ge=1, le=10000, description="At most this many entries are returned.")


class StatusEntry(BaseModel):
    path: str = Field(description="Path relative to the repository's top directory.")
    orig_path: str | None = Field(default=None, description="Former path of a rename or copy.")
    kind: Literal["changed", "renamed", "copied", "unmerged", "untracked", "ignored"]
    index: str = Field(description="Staged status letter (porcelain v2 X: M A D R C U, '.' unchanged).")
    worktree: str = Field(description="Unstaged status letter (porcelain v2 Y).")


class GitStatusResult(ToolResult):
    repository: str = Field(description="The repository's top directory.")
    branch: str | None
    detached: bool
    commit: str | None = Field(description="HEAD commit id (null before the first commit).")
    upstream: str | None
    ahead: int | None
    behind: int | None
    clean: bool = Field(description="No staged, unstaged, unmerged or untracked changes (ignored files aside).")
    entries: list[StatusEntry]
    total_entries: int
    truncated: bool


class GitDiffInput(RepoInput):
    mode: Literal["unstaged", "staged", "ref"] = Field(
        default="unstaged",
        description="unstaged: work tree vs index; staged: index vs HEAD (or vs `ref`); ref: work tree vs `ref` "
        "(or `ref` vs `to_ref`).",
    )
    ref: str | None = Field(
        default=None,
        description="Revision to compare against (branch, tag, commit id, HEAD~2 ...). Required for mode=ref.",
        max_length=200,
    )
    to_ref: str | None = Field(
        default=None, description="Second revision (mode=ref): diff ref..to_ref.", max_length=200
    )
    paths: list[PathText] = Field(
        default_factory=list, description="Limit to these paths (inside the roots).", max_length=100
    )
    context_lines: int = Field(default=3, ge=0, le=100)
    max_bytes: int = Field(default=100_000, ge=1000, le=5_000_000, description="Cap of the patch text (head+tail).")
    stat_only: bool = Field(default=False, description="Only the per-file counts, no patch text.")


class DiffFile(BaseModel):
    path: str
    old_path: str | None = None
    additions: int | None = Field(description="Null for binary files.")
    deletions: int | None
    binary: bool


class GitDiffResult(ToolResult):
    mode: str
    base: str | None = Field(description="Full commit id compared against, if any.")
    target: str | None
    files: list[DiffFile]
    files_changed: int
    additions: int
    deletions: int
    diff: str
    truncated: bool
    dropped_bytes: int

    def render_text(self) -> str:
        summary = f"{self.files_changed} files changed, +{self.additions} -{self.deletions}"
        return summary + ("\n" + self.diff if self.diff else "")


class GitLogInput(RepoInput):
    max_count: int = Field(default=20, ge=1, le=200, description="Number of commits to return.")
    skip: int = Field(default=0, ge=0, le=100000, description="Commits to skip first (paging).")
    ref: str | None = Field(default=None, description="Start from this revision instead of HEAD.", max_length=200)
    paths: list[PathText] = Field(
        default_factory=list, description="Only commits touching these paths.", max_length=100
    )


class LogEntry(BaseModel):
    commit: str
    short: str
    author_name: str
    author_email: str
    author_date: str
    committer_date: str
    parents: list[str]
    subject: str
    body: str


class GitLogResult(ToolResult):
    entries: list[LogEntry]
    count: int
    has_more: bool


class ListSafeCommandsInput(ToolInput):
    pass


class ProgramPolicy(BaseModel):
    program: str
    executable: str | None = Field(description="Resolved on the fixed PATH; null when not installed.")
    why_allowed: str
    policy: str
    refused: list[str] = Field(description="Flags/subcommands the policy refuses.")


class SandboxInfo(ToolResult):
    kind: Literal["bubblewrap", "seatbelt", "off", "unavailable"]
    executable: str | None = None
    warning: str | None = None
    why: str = ""


class ListSafeCommandsResult(ToolResult):
    programs: list[ProgramPolicy]
    never_allowed: dict[str, str] = Field(description="Programs refused whatever the configuration (and why).")
    search_path: str
    roots: list[str]
    default_timeout_seconds: float
    max_timeout_seconds: float
    max_output_bytes: int
    rules: list[str]
    sandbox: SandboxInfo = Field(description="The OS sandbox every program runs in, or why none can run.")
