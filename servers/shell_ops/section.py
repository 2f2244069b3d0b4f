"""The shell_ops section: allow-listed programs without a shell, npm scripts, hardened git queries."""

from __future__ import annotations

from typing import Any

from mcp_sections.servers.shell_ops.models import (
    CommandResult,
    GitDiffInput,
    GitDiffResult,
    GitLogInput,
    GitLogResult,
    GitStatusInput,
    GitStatusResult,
    ListProcessesInput,
    ListProcessesResult,
    ListSafeCommandsInput,
    ListSafeCommandsResult,
    NpmScriptResult,
    ProcessOutputResult,
    ReadProcessOutputInput,
    RunCommandInput,
    RunNpmScriptInput,
    StartProcessInput,
    StopProcessInput,
    WriteProcessInputInput,
)
from mcp_sections.servers.shell_ops.policies.allow_list import NEVER_ALLOWED
from mcp_sections.servers.shell_ops.settings import ShellOpsSettings
from mcp_sections.shared.framework.requirements import Requirement, no_sandbox, program
from mcp_sections.shared.framework.sections import Container, Section, SectionRuntime
from mcp_sections.shared.framework.tools import OPEN_WORLD, OVERWRITE, READ_ONLY, Annotations, ToolContext, tool

READS_OUTPUT = Annotations(read_only=True, destructive=False, idempotent=False, open_world=False)
"""Reads a process's output and moves its read position (the next call returns newer output)."""


def open_state(runtime: SectionRuntime) -> Any:
    from mcp_sections.servers.shell_ops.service import ShellOps

    settings = runtime.settings_of(ShellOpsSettings)
    return ShellOps(
        settings,
        runtime.settings.roots,
        private=runtime.settings.own_state_paths(),
        config_file=runtime.settings.config_file,
    )


def _progress(ctx: ToolContext | None, what: str, timeout: float | None) -> Any:
    if ctx is None:
        return None

    async def report(elapsed: float) -> None:
        await ctx.report_progress(round(elapsed, 1), timeout, f"{what} running for {elapsed:.0f}s")

    return report


def _command_preflight(params: RunCommandInput, state: Any) -> None:
    """Preflight of run_command (`shared.serving.preflight`): the service's own checks (`check_command`)."""
    state.check_command(params.command, params.cwd, params.env, params.timeout_seconds)


def _start_preflight(params: StartProcessInput, state: Any) -> None:
    """Preflight of start_process: the service's own checks, programs that end on their own (git, installs) refused
    too, so that such a call is refused before anyone is asked to approve it."""
    state.check_command(params.command, params.cwd, params.env, background=True)


def _npm_preflight(params: RunNpmScriptInput, state: Any) -> None:
    """Preflight of run_npm_script: the service's own checks (`check_npm_script`); nothing runs."""
    state.check_npm_script(params.script, params.args, params.cwd, params.timeout_seconds)


@tool(
    name="run_command",
    title="Run an allow-listed command",
    annotations=OPEN_WORLD,
    preflight=_command_preflight,
    examples=(
        "run the unit tests from the command line",
        "execute a program like ls or python in the project",
        "build the project with cargo",
        "run a shell command",
        "lint and type-check the code with ruff and mypy",
        "use a command-line utility such as jq, sort, du or diff",
    ),
    long=lambda params: (params.timeout_seconds or 0) > 60,  # a call allowed over a minute: an MCP task
)
async def run_command(params: RunCommandInput, state: Any, ctx: ToolContext) -> CommandResult:
    """Run one allow-listed program (see list_safe_commands) inside the allowed roots and the OS sandbox, WITHOUT a
    shell.

    `command` is an argv list (preferred; an element may hold line breaks: a commit message, a multi-line
    `python -c`) or a string split into words like a shell would — but pipes, `;`, `&&`, redirections, `$(...)`,
    backticks, unquoted line breaks and `VAR=value` prefixes are refused (INVALID_INPUT): make one call per command,
    and give variables in `env`. The sandbox confines what the program does (it writes only the roots, reads only
    them and the system, has no network), so options that only change its own behaviour run: `python -c`,
    `pytest -o pythonpath=src`, `git -c`, `find -exec`, `make VAR=x`. A few rules remain (list_safe_commands shows
    them): secret files (.env, keys) are not named, git's repository options stay inside the roots, wrappers and
    shells never run. Installers (`pip install -e ".[test]"`, `python -m pip install -r requirements.txt`, `uv sync`,
    `npm ci`, `poetry install`) reach the package registries only, through an egress proxy (`blocked` lists what else
    they tried); no other program has a network. Programs are looked up in the project's environment first (the
    venv — `.venv`, `venv`, any `pyvenv.cfg` directory — and `node_modules/.bin` of `cwd` or above: `python`, `pip`,
    `pytest` are the venv's), then on the server's fixed search path; a program inside the roots may also be given by
    path (`./gradlew`, `.venv/bin/pytest`). The child gets a fixed environment (that PATH, a private HOME) plus `env`
    — nothing from the server; git commits as the identity list_safe_commands shows (`git_identity`). Returns
    exit_code (non-zero is a normal result), stdout, stderr (each capped: head and tail kept, dropped bytes counted),
    duration_ms, and a `hint` when the output shows a failure with a known fix. Progress is reported about every
    second. A timeout kills the whole process group and fails with TIMEOUT (last output in the details). With
    `sandbox = "off"` every argument rule applies again (`python -c`, `find -exec`, installs refused). For a program
    that keeps running (a dev server, a watcher, a REPL), use start_process.
    """
    timeout = state.timeout_for(params.timeout_seconds)
    data = await state.run_command(params.command, params.cwd, timeout, _progress(ctx, "command", timeout), params.env)
    return CommandResult(**data)


@tool(
    name="run_npm_script",
    title="Run a package.json script",
    annotations=OPEN_WORLD,
    preflight=_npm_preflight,
    examples=(
        "run a script from package.json",
        "start the dev server defined in package.json",
        "execute an npm script like build or lint",
        "npm run start",
        "run the test script of this node project",
        "npm run build",
    ),
    long=lambda params: (params.timeout_seconds or 0) > 60,  # a call allowed over a minute: an MCP task
)
async def run_npm_script(params: RunNpmScriptInput, state: Any, ctx: ToolContext) -> NpmScriptResult:
    """Run an existing script from package.json (`npm run-script NAME -- ARGS`) in `cwd` (default: first root).

    Only scripts defined in that package.json; lifecycle hooks (preinstall, postinstall, prepare, ...) and the
    pre/post hooks of other scripts are refused, and npm runs with `--ignore-scripts` (so no pre/post hook runs
    around the script) and `--script-shell=/bin/sh`. `args` reach the script after `--`, quoted by npm.
    Returns the same fields as run_command plus the script's text. Timeouts as in run_command.
    """
    timeout = state.timeout_for(params.timeout_seconds)
    data = await state.run_npm_script(
        params.script, params.args, params.cwd, timeout, _progress(ctx, f"npm script {params.script}", timeout)
    )
    return NpmScriptResult(**data)


@tool(
    name="git_status",
    title="Git status",
    annotations=READ_ONLY,
    examples=(
        "show git status",
        "are there uncommitted or untracked files",
        "which branch is checked out",
        "what's the state of the git repository",
        "is the working tree clean",
        "how far ahead of origin is my branch",
    ),
)
async def git_status(params: GitStatusInput, state: Any) -> GitStatusResult:
    """Structured `git status` of the repository containing `cwd` (which must be inside the roots).

    Returns the branch (or detached), HEAD commit, upstream with ahead/behind counts, `clean`, and entries
    (path, orig_path for renames, kind changed/renamed/copied/unmerged/untracked/ignored, index and worktree
    status letters), at most `max_entries`. Submodules are not inspected. Hooks, fsmonitor and filter drivers
    of the repository config never run. Read-only: the index is not refreshed.
    """
    return GitStatusResult(
        **await state.git_status(params.cwd, params.include_untracked, params.include_ignored, params.max_entries)
    )


@tool(
    name="git_diff",
    title="Git diff",
    annotations=READ_ONLY,
    examples=(
        "show the diff of my uncommitted changes",
        "what's different between two commits",
        "diff stats of the staged files",
        "what did I change in the code",
        "compare my branch with main",
        "show the patch for a file since the last commit",
    ),
)
async def git_diff(params: GitDiffInput, state: Any) -> GitDiffResult:
    """Diff of the repository containing `cwd`: mode unstaged (work tree vs index), staged (index vs HEAD, or vs
    `ref`), or ref (work tree vs `ref`, or `ref` vs `to_ref`). Revisions are validated (no leading `-`, no
    ranges) and resolved to commit ids first. Optional `paths` (inside the roots) limit the diff.

    Returns per-file additions/deletions (null for binary files), totals and the unified patch (capped at
    `max_bytes`, head and tail kept). External diff tools and textconv drivers never run.
    """
    data = await state.git_diff(
        params.cwd,
        params.mode,
        params.ref,
        params.to_ref,
        params.paths,
        params.context_lines,
        params.max_bytes,
        params.stat_only,
    )
    return GitDiffResult(**data)


@tool(
    name="git_log",
    title="Git log",
    annotations=READ_ONLY,
    examples=(
        "show the recent commit history",
        "list the commits that touched a file",
        "who made the latest commits",
        "git history of the repository",
        "the last 10 commit messages",
        "page through older commits",
    ),
)
async def git_log(params: GitLogInput, state: Any) -> GitLogResult:
    """Recent commits of the repository containing `cwd`, newest first: at most `max_count` (≤ 200) after
    skipping `skip`, from `ref` (default HEAD), optionally only those touching `paths`.

    Each entry: commit id, short id, author name/email, author and committer dates (ISO 8601), parents,
    subject and body (body capped at 4000 characters). `has_more` tells whether older commits remain.
    """
    return GitLogResult(**await state.git_log(params.cwd, params.max_count, params.skip, params.ref, params.paths))


@tool(
    name="list_safe_commands",
    title="List the allowed commands",
    annotations=READ_ONLY,
    examples=(
        "which shell commands may I run",
        "what programs are on the allow-list",
        "which tools can run_command start",
        "list the allowed executables",
        "is node available as a command",
        "what are the rules and limits for running commands",
    ),
)
def list_safe_commands(params: ListSafeCommandsInput, state: Any) -> ListSafeCommandsResult:
    """The programs run_command may start (with their resolved executable and argument policy), the programs
    that are never allowed, the fixed search path, the roots, the timeout and output limits, the rules, and who
    commits are made as (`git_identity`).
    The allow-list and roots are fixed by the server's operator; no tool can change them.
    """
    return ListSafeCommandsResult(**state.describe())


@tool(
    name="start_process",
    title="Start a long-running process",
    annotations=OPEN_WORLD,
    preflight=_start_preflight,
    examples=(
        "start the dev server and keep it running",
        "run a watcher in the background",
        "open a Python REPL I can send lines to",
        "start a long test run and check on it later",
        "launch a server in the background",
        "run npm run dev without waiting for it to finish",
    ),
)
def start_process(params: StartProcessInput, state: Any) -> ProcessOutputResult:
    """Start one allow-listed program that keeps running (a dev server, a watcher, a REPL such as `python3 -i`, a
    long test run), checked and confined exactly like run_command: the same allow-list, policies, project
    environment and OS sandbox; no shell.

    Waits up to `wait_seconds` (or until `wait_for` appears in the output, or the program ends) and returns its
    first output and `process_id`. Then: read_process_output (new output), write_process_input (its stdin),
    stop_process, list_processes. `env` adds variables as in run_command (PORT, NODE_ENV, PYTHONPATH, ...).
    `ports`: loopback ports the program listens on, published on the host's 127.0.0.1 so that its server can be
    fetched (web_ops reads it while it is published); the program itself still has no network. Limits: the
    server's number of processes at once (MAX_LIMIT_EXCEEDED beyond), their lifetime, and the output kept per
    process (the oldest is dropped and counted). Every process ends with the server. A process started by the
    very same call (command, cwd, env, ports) and still running is returned instead of a second one, with
    already_running=true; allow_duplicate=true starts another.
    """
    return ProcessOutputResult(
        **state.start_process(
            params.command,
            params.cwd,
            params.env,
            params.ports,
            params.wait_seconds,
            params.wait_for,
            params.lifetime_seconds,
            params.max_bytes,
            params.allow_duplicate,
        )
    )


@tool(
    name="read_process_output",
    title="Read a process's output",
    annotations=READS_OUTPUT,
    examples=(
        "what did the dev server print",
        "check on the running tests",
        "show the new output of the background process",
        "did the watcher rebuild",
        "what has the background job written since I last checked",
        "read stdout and stderr of a process started earlier",
    ),
)
def read_process_output(params: ReadProcessOutputInput, state: Any) -> ProcessOutputResult:
    """The output (stdout and stderr interleaved) of a process started with start_process: by default what it
    wrote since the last read; with `offset`, from that byte on (the server keeps the last part of each process's
    output; `dropped_bytes` counts what was asked for but is gone). At most `max_bytes`, cut after a line break;
    `more` says whether more is waiting. With `wait_seconds`, waits for new output when there is none yet. Also
    returns the process's state and exit code. Works on ended processes too (the most recent ones are kept).
    """
    return ProcessOutputResult(
        **state.read_process_output(params.process_id, params.offset, params.max_bytes, params.wait_seconds)
    )


@tool(
    name="write_process_input",
    title="Write to a process's input",
    annotations=OPEN_WORLD,
    examples=(
        "type a line into the REPL",
        "answer the prompt of the running program",
        "send input to the background process",
        "end the program's input",
        "send a command to the interactive shell I started",
        "feed stdin to a running program",
    ),
)
def write_process_input(params: WriteProcessInputInput, state: Any) -> ProcessOutputResult:
    """Write `input` (plus a line break, unless `newline` is false) to the standard input of a running process
    started with start_process — a REPL (`python3 -i`), an interactive tool — then wait up to `wait_seconds` for
    the output it causes and return the unread output. `close_input` ends its input (EOF) afterwards. What a REPL
    runs is confined like every program (inside the sandbox). Fails with EXECUTION_FAILED when the process has
    ended or closed its input.
    """
    return ProcessOutputResult(
        **state.write_process_input(
            params.process_id, params.input, params.newline, params.close_input, params.wait_seconds, params.max_bytes
        )
    )


@tool(
    name="stop_process",
    title="Stop a process",
    annotations=OVERWRITE,
    examples=(
        "stop the dev server",
        "kill the background process",
        "press Ctrl-C in the running program",
        "end the watcher",
        "terminate the process I started",
        "shut down the background server",
    ),
)
def stop_process(params: StopProcessInput, state: Any) -> ProcessOutputResult:
    """Stop a process started with start_process: send `signal` (SIGTERM by default; SIGINT is Ctrl-C) to the
    program, wait up to `grace_seconds` for it to end, then kill its whole sandbox (every process it started).
    Returns its final state, exit code and unread output. Stopping an ended process changes nothing.
    """
    return ProcessOutputResult(
        **state.stop_process(params.process_id, params.signal, params.grace_seconds, params.max_bytes)
    )


@tool(
    name="list_processes",
    title="List long-running processes",
    annotations=READ_ONLY,
    examples=(
        "which background processes are running",
        "is the dev server still up",
        "list the processes I started",
        "show the running and finished processes",
        "what processes have I got going",
        "which ports do my background processes publish",
    ),
)
def list_processes(params: ListProcessesInput, state: Any) -> ListProcessesResult:
    """The processes started with start_process — running, and the most recent ended ones — with their command,
    working directory, state, exit code, age, output size, unread output and published ports; the limit of
    processes at once, their maximum lifetime, and the environment variables start_process may add.
    """
    return ListProcessesResult(**state.list_processes())


def program_names(settings: ShellOpsSettings) -> dict[str, str]:
    """What find_tools indexes beside the tools' text: the programs they may start, and the programs never allowed
    (a need often names a program: "count the lines with wc", "can I use curl")."""
    allowed = " ".join(settings.allowed_programs)
    return {
        "run_command": allowed,
        "start_process": allowed,
        "list_safe_commands": f"{allowed} {' '.join(NEVER_ALLOWED)}",
    }


SECTION = Section(
    id="shell_ops",
    requirements=(
        Requirement(
            "OS sandbox: bubblewrap, or Seatbelt on macOS",
            no_sandbox,
            "apt-get install bubblewrap (or sandbox = 'off')",
        ),
        Requirement(
            "git",
            program("git"),
            "apt-get install git",
            optional=True,
            without="every tool but git_status, git_diff and git_log",
        ),
    ),
    output_source="program output",
    container=Container(stage="runtime-tools", workspace="write"),
    search_terms=program_names,
    name="Shell operations",
    description="Run allow-listed programs without a shell — one-shot or long-running (dev servers, watchers, "
    "REPLs) — package.json scripts, and hardened git queries, confined to the allowed roots.",
    tools=(
        run_command,
        run_npm_script,
        git_status,
        git_diff,
        git_log,
        list_safe_commands,
        start_process,
        read_process_output,
        write_process_input,
        stop_process,
        list_processes,
    ),
    instructions=(
        "Commands never go through a shell: pass argv lists, one command per call (variables go in `env`). Programs "
        "run in an OS sandbox; installers reach the package registries only. Call list_safe_commands to see which "
        "programs and rules apply. Prefer git_status/git_diff/git_log over `git` in run_command. A "
        "project's venv and node_modules/.bin come first on the search path. For programs that keep running, use "
        "start_process, then read_process_output / write_process_input / stop_process."
    ),
    settings_model=ShellOpsSettings,
    open_state=open_state,
    masks_secrets=True,
)
