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
    ListSafeCommandsInput,
    ListSafeCommandsResult,
    NpmScriptResult,
    RunCommandInput,
    RunNpmScriptInput,
)
from mcp_sections.servers.shell_ops.settings import ShellOpsSettings
from mcp_sections.shared.requirements import Requirement, no_sandbox, program
from mcp_sections.shared.sections import Container, Section, SectionRuntime
from mcp_sections.shared.tools import OPEN_WORLD, READ_ONLY, ToolContext, tool


def open_state(runtime: SectionRuntime) -> Any:
    from mcp_sections.servers.shell_ops.service import ShellOps

    settings = runtime.settings_of(ShellOpsSettings)
    return ShellOps(settings, runtime.settings.roots, private=runtime.settings.own_state_paths())


def _progress(ctx: ToolContext | None, what: str, timeout: float | None) -> Any:
    if ctx is None:
        return None

    async def report(elapsed: float) -> None:
        await ctx.report_progress(round(elapsed, 1), timeout, f"{what} running for {elapsed:.0f}s")

    return report


@tool(
    name="run_command",
    title="Run an allow-listed command",
    annotations=OPEN_WORLD,
    examples=(
        "run the unit tests from the command line",
        "execute a program like ls or python in the project",
        "build the project with cargo",
        "run a shell command",
    ),
    long=lambda params: (params.timeout_seconds or 0) > 60,  # a call allowed over a minute: an MCP task
)
async def run_command(params: RunCommandInput, state: Any, ctx: ToolContext) -> CommandResult:
    """Run one allow-listed program (see list_safe_commands) inside the allowed roots, WITHOUT a shell.

    `command` is an argv list (preferred) or a string split into words like a shell would — but pipes, `;`,
    `&&`, redirections, `$(...)`, backticks, variables and `VAR=value` prefixes are refused (INVALID_INPUT):
    make one call per command. Per-program policies refuse flags that run code or write outside the project
    (e.g. `python3 -c`, `node -e`, `find -exec/-delete`, `git -c`, `git diff --output`, `rg --pre`, `sort -o`);
    path-like arguments and `cwd` must stay inside the roots. The child gets a fixed environment (fixed PATH,
    private HOME) — nothing from the server. Returns exit_code (non-zero is a normal result), stdout, stderr
    (each capped: head and tail kept, dropped bytes counted) and duration_ms. Progress is reported about every
    second. A timeout kills the whole process group and fails with TIMEOUT (last output in the details).
    """
    timeout = state.timeout_for(params.timeout_seconds)
    data = await state.run_command(params.command, params.cwd, timeout, _progress(ctx, "command", timeout))
    return CommandResult(**data)


@tool(
    name="run_npm_script",
    title="Run a package.json script",
    annotations=OPEN_WORLD,
    examples=(
        "run a script from package.json",
        "start the dev server defined in package.json",
        "execute an npm script like build or lint",
        "npm run start",
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
    ),
)
def list_safe_commands(params: ListSafeCommandsInput, state: Any) -> ListSafeCommandsResult:
    """The programs run_command may start (with their resolved executable and argument policy), the programs
    that are never allowed, the fixed search path, the roots, the timeout and output limits, and the rules.
    The allow-list and roots are fixed by the server's operator; no tool can change them.
    """
    return ListSafeCommandsResult(**state.describe())


SECTION = Section(
    id="shell_ops",
    requirements=(
        Requirement(
            "OS sandbox: bubblewrap, or Seatbelt on macOS",
            no_sandbox,
            "apt-get install bubblewrap (or sandbox = 'off')",
        ),
        Requirement("git", program("git"), "apt-get install git", optional=True),
    ),
    output_source="program output",
    container=Container(stage="runtime-tools", workspace="write"),
    name="Shell operations",
    description="Run allow-listed programs without a shell, package.json scripts, and hardened git queries, "
    "confined to the allowed roots.",
    tools=(run_command, run_npm_script, git_status, git_diff, git_log, list_safe_commands),
    instructions=(
        "Commands never go through a shell: pass argv lists, one command per call. Call list_safe_commands to see "
        "which programs and flags are allowed. Prefer git_status/git_diff/git_log over `git` in run_command."
    ),
    settings_model=ShellOpsSettings,
    open_state=open_state,
    masks_secrets=True,
)
