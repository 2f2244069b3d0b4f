"""install_package (npm or pip, in the OS sandbox) and list_allowed_roots (the roots in force and their source)."""

from __future__ import annotations

from mcp_sections.servers.file_ops.models import InstallPackageInput, InstallPackageResult, ListRootsResult, NoInput
from mcp_sections.servers.file_ops.state import FileOpsState
from mcp_sections.servers.file_ops.tools.calls import guard_and_source, guard_of, work
from mcp_sections.shared.framework.tools import OPEN_WORLD, READ_ONLY, ToolContext, tool


@tool(
    name="install_package",
    title="Install npm or pip packages",
    annotations=OPEN_WORLD,
    examples=(
        "npm install a library into this project",
        "add a python package to the virtualenv",
        "add a package needed only for development",
        "pip install a package",
        "install requests with pip",
        "add lodash as a dependency",
    ),
)
async def install_package(params: InstallPackageInput, state: FileOpsState, ctx: ToolContext) -> InstallPackageResult:
    """Install packages from the npm or PyPI registry, or the project itself, into a project inside the allowed roots.

    Registry specs are strictly validated (name plus optional version or range; pip extras): no options or URLs. pip
    also installs local projects inside the roots (`packages=[".[test]"]`, with `editable=true` for
    `pip install -e ".[test]"`) and requirements files (`requirements=["requirements.txt"]`); npm with no package
    installs the project's own dependencies. Runs without a shell in the project directory, with a time limit. npm
    installs into the project (install scripts are skipped by default); pip installs into the project's virtual
    environment (the nearest directory with a pyvenv.cfg, .venv first) and is refused if there is none. The installer
    runs inside the OS sandbox (bubblewrap): it sees the project, its venv and the local projects, not the rest of the
    machine, and reaches only the configured package registries (through an egress proxy; `blocked` lists what else
    it tried) — the same way out as an installer started with run_command. Returns the command run and the end of
    its output.
    """
    from mcp_sections.servers.file_ops import packages

    guard = await guard_of(state, ctx)
    settings = state.settings
    await ctx.report_progress(0, None, f"{params.manager} install {' '.join(params.packages)[:200]}".rstrip())
    outcome = await work(
        packages.install_package,
        guard,
        params.manager,
        params.packages,
        params.path,
        dev=params.dev,
        timeout_seconds=settings.install_timeout_seconds,
        npm_ignore_scripts=settings.npm_ignore_scripts,
        pip_allow_server_environment=settings.pip_allow_server_environment,
        sandbox=state.sandbox(),
        registries=settings.install_registries,
        editable=params.editable,
        requirements=params.requirements,
    )
    return InstallPackageResult.model_validate(outcome)


@tool(
    name="list_allowed_roots",
    title="List the allowed roots",
    annotations=READ_ONLY,
    examples=(
        "which folders can the file tools access",
        "what are my allowed root directories",
        "which paths am I permitted to read and write",
        "show the workspace roots",
        "where am I allowed to work",
        "which directories are accessible",
    ),
)
async def list_allowed_roots(params: NoInput, state: FileOpsState, ctx: ToolContext) -> ListRootsResult:
    """List the directories file tools may use right now, and where they come from.

    The server's configured roots (--root) are the limit; when the client offers MCP roots, only client
    roots inside the configured ones are used (or the client's roots alone if none are configured).
    Relative paths resolve against the first root. Also lists the protected (denied) name patterns.
    """
    guard, source, uris = await guard_and_source(state, ctx)
    return ListRootsResult(
        roots=[str(root) for root in guard.roots],
        source=source,  # type: ignore[arg-type]
        configured_roots=[str(root) for root in state.configured.roots],
        client_roots=uris,
        deny_globs=list(guard.deny_globs),
    )
