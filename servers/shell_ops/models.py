"""Inputs and outputs of the shell_ops tools."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from mcp_sections.shared.framework.tools import ToolInput, ToolResult

CWD_DESCRIPTION = (
    "Working directory, inside the allowed roots (relative paths start at the first root). Default: the first root."
)
MAX_ARGUMENT_CHARS = 65536  # one argv item: as long as the whole string form of a command may be
PathText = Annotated[str, Field(max_length=4096)]  # PATH_MAX

ENV_DESCRIPTION = (
    'Environment variables for the program (e.g. {"PYTHONPATH": "src", "PYTEST_ADDOPTS": "-x"}). Inside the '
    "sandbox any name but LD_*/DYLD_*, the proxy variables, PATH, HOME and TMPDIR; with the sandbox off only the "
    "server's list (list_processes shows it)."
)
EnvVariables = dict[Annotated[str, Field(max_length=64)], Annotated[str, Field(max_length=4096)]]

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
            "variables are refused; a line break inside quotes is kept. The program must be on the allow-list (see "
            "list_safe_commands)."
        ),
    )
    cwd: str | None = Field(default=None, description=CWD_DESCRIPTION, max_length=4096)
    env: EnvVariables = Field(default_factory=dict, max_length=32, description=ENV_DESCRIPTION)
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
    hint: str | None = Field(
        default=None,
        description="How to fix a failure the output shows and the server knows a fix for (git without a commit "
        "identity, `git config --global` unable to write).",
    )
    blocked: list[str] = Field(
        default_factory=list,
        description="An installer's attempts beyond the configured registries, refused by its egress proxy.",
    )

    def render_text(self) -> str:
        head = f"exit {self.exit_code} in {self.duration_ms} ms ({self.executable} in {self.cwd})"
        if self.warning:
            head = f"WARNING: {self.warning}\n{head}"
        parts = [head]
        if self.stdout:
            parts.append("--- stdout ---\n" + self.stdout.rstrip("\n"))
        if self.stderr:
            parts.append("--- stderr ---\n" + self.stderr.rstrip("\n"))
        if self.blocked:
            parts.append("--- refused by the registry-only egress ---\n" + "\n".join(self.blocked))
        if self.hint:
            parts.append(f"HINT: {self.hint}")
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


class GitIdentityInfo(BaseModel):
    name: str | None = Field(description="The user.name commits are made as; null: none known.")
    email: str | None = Field(description="The user.email commits are made as; null: none known.")
    source: str | None = Field(
        description="Where they come from: the settings (git_author_name/git_author_email) or the host git config "
        "(the server's own `git config --global`). A repository's own user.name/user.email wins over both."
    )


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
    git_identity: GitIdentityInfo = Field(description="Who commits made by programs are made as.")


# -- long-running processes -------------------------------------------------------------------------------

ProcessState = Literal["running", "exited", "stopped", "expired"]
ProcessId = Annotated[str, Field(min_length=1, max_length=40, description="The id start_process returned (`p1`).")]
MAX_BYTES_DESCRIPTION = "At most this many bytes of output are returned (cut after a line break when more follows)."


class StartProcessInput(ToolInput):
    command: (
        Annotated[list[Annotated[str, Field(max_length=MAX_ARGUMENT_CHARS)]], Field(min_length=1, max_length=256)]
        | Annotated[str, Field(min_length=1, max_length=MAX_ARGUMENT_CHARS)]
    ) = Field(
        description='The command as an argv list (preferred), e.g. ["npm", "run", "dev"] or ["python3", "-i"]; the '
        "same rules as run_command (allow-list, policies, no shell)."
    )
    cwd: str | None = Field(default=None, description=CWD_DESCRIPTION, max_length=4096)
    env: EnvVariables = Field(default_factory=dict, max_length=32, description=ENV_DESCRIPTION)
    ports: list[Annotated[int, Field(ge=1024, le=65535)]] = Field(
        default_factory=list,
        max_length=8,
        description="Loopback ports the program listens on, published on the host's 127.0.0.1 under the same number "
        "(e.g. [8000] for a dev server), so that it can be fetched; the program itself still has no network.",
    )
    wait_seconds: float = Field(
        default=2.0, ge=0, le=60, description="How long to wait for the first output before returning."
    )
    wait_for: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="Return as soon as this text appears in the output (e.g. 'Listening on'), within wait_seconds.",
    )
    lifetime_seconds: float | None = Field(
        default=None, gt=0, le=7 * 86400, description="Kill it after this long (default and maximum: the server's)."
    )
    max_bytes: int = Field(default=16384, ge=256, le=1024 * 1024, description=MAX_BYTES_DESCRIPTION)
    allow_duplicate: bool = Field(
        default=False,
        description="Start it even if a process started with the very same command, cwd, env and ports is still "
        "running (default false: that process is returned with already_running=true, not a second one).",
    )


class ReadProcessOutputInput(ToolInput):
    process_id: ProcessId
    offset: int | None = Field(
        default=None,
        ge=0,
        description="Read from this byte offset of the process's output (a `next_offset` or `offset` returned "
        "earlier); default: where the last read stopped (new output only).",
    )
    max_bytes: int = Field(default=65536, ge=256, le=1024 * 1024, description=MAX_BYTES_DESCRIPTION)
    wait_seconds: float = Field(
        default=0,
        ge=0,
        le=60,
        description="When there is no new output yet, wait up to this long for some (or for the process to end).",
    )


class WriteProcessInputInput(ToolInput):
    process_id: ProcessId
    input: str = Field(max_length=65536, description="Text to write to the process's standard input.")
    newline: bool = Field(default=True, description="Add a line break after `input` (as pressing Enter does).")
    close_input: bool = Field(default=False, description="Close its standard input afterwards (end of input).")
    wait_seconds: float = Field(
        default=1.0, ge=0, le=60, description="Wait up to this long for the output the input causes."
    )
    max_bytes: int = Field(default=16384, ge=256, le=1024 * 1024, description=MAX_BYTES_DESCRIPTION)


class StopProcessInput(ToolInput):
    process_id: ProcessId
    signal: Literal["SIGTERM", "SIGINT", "SIGHUP", "SIGKILL"] = Field(
        default="SIGTERM", description="Sent to the program first (SIGINT is Ctrl-C); SIGKILL ends it at once."
    )
    grace_seconds: float = Field(
        default=5.0, ge=0, le=60, description="How long it may take to end before its whole sandbox is killed."
    )
    max_bytes: int = Field(default=16384, ge=256, le=1024 * 1024, description=MAX_BYTES_DESCRIPTION)


class ListProcessesInput(ToolInput):
    pass


class PublishedPort(BaseModel):
    port: int
    url: str = Field(
        description="Where the program's server answers on this machine (web_ops may fetch it when its "
        "operator allowed the address)."
    )


class ProcessSummary(BaseModel):
    process_id: str
    command: list[str] = Field(description="The absolute program and its arguments.")
    cwd: str
    state: ProcessState = Field(
        description="running; exited (by itself); stopped (stop_process or the server's end); expired (killed at "
        "the end of its lifetime)."
    )
    exit_code: int | None = Field(
        description="Its exit status once ended; killed by signal N: 128+N inside bubblewrap (-9 when its whole "
        "sandbox was killed), -N without a sandbox."
    )
    started_at: str
    elapsed_seconds: float
    total_bytes: int = Field(description="Bytes of output written so far.")
    unread_bytes: int = Field(description="Output after where the last read stopped.")
    ports: list[PublishedPort]


class ProcessOutputResult(ToolResult):
    process: ProcessSummary
    output: str = Field(description="stdout and stderr interleaved as written, from `offset` to `next_offset`.")
    offset: int = Field(description="Byte offset of the first byte of `output` in everything the process wrote.")
    next_offset: int = Field(description="Where this read stopped: the next read without `offset` starts here.")
    dropped_bytes: int = Field(
        description="Bytes asked for that were no longer kept (the server keeps the last part of each process's "
        "output); they are lost."
    )
    more: bool = Field(description="More output is already available after next_offset.")
    ready: bool | None = Field(default=None, description="start_process: whether `wait_for` appeared.")
    already_running: bool = Field(
        default=False,
        description="start_process: true when a process started by the very same call was still running; it is "
        "the one returned (its output since it was last read), and no second one was started.",
    )
    sandbox: Literal["bubblewrap", "seatbelt", "off"]
    warning: str | None = None

    def render_text(self) -> str:
        info = self.process
        status = info.state if info.exit_code is None else f"{info.state}, exit {info.exit_code}"
        head = f"{info.process_id} ({status}) {' '.join(info.command)[:200]} in {info.cwd}"
        if info.ports:
            head += " — " + ", ".join(port.url for port in info.ports)
        if self.warning:
            head = f"WARNING: {self.warning}\n{head}"
        lost = f"[... {self.dropped_bytes} bytes no longer kept ...]\n" if self.dropped_bytes else ""
        tail = f"\n[more output after offset {self.next_offset}]" if self.more else ""
        return f"{head}\n--- output (bytes {self.offset}-{self.next_offset}) ---\n{lost}{self.output}{tail}"


class ListProcessesResult(ToolResult):
    processes: list[ProcessSummary]
    running: int
    max_processes: int
    max_lifetime_seconds: float
    environment_names: list[str] = Field(
        description="With the sandbox off, the environment variables run_command and start_process may add."
    )
