"""npm: only `run`, `test` and `ls`, lifecycle scripts refused, script names checked."""

from __future__ import annotations

import re
from collections.abc import Iterable

from mcp_sections.servers.shell_ops.policies.policy import PolicyContext
from mcp_sections.servers.shell_ops.policies.syntax import denied, find_flag, invalid, words

NPM_SUBCOMMANDS = ("run", "run-script", "rum", "urn", "test", "t", "tst", "ls", "list", "ll", "la")
NPM_REFUSED = words(
    "--script-shell --ignore-scripts --no-ignore-scripts --node-options --userconfig --globalconfig "
    "--prefix --shell --call --workspaces --workspace --include-workspace-root"
)


def policy_npm(args: list[str], ctx: PolicyContext) -> list[str]:
    positional = [arg for arg in args if not arg.startswith("-")]
    flags_only = [arg for arg in args if arg.startswith("-")]
    if not positional:
        if all(arg in ("--version", "-v") for arg in flags_only) and flags_only:
            return args
        raise denied(f"npm needs a subcommand; allowed: {', '.join(NPM_SUBCOMMANDS)}.")
    sub = positional[0]
    if sub not in NPM_SUBCOMMANDS:
        raise denied(
            f"npm {sub} is refused by the command policy (installs, exec/npx, publishing and config changes run "
            f"third-party code or leave the project); allowed: {', '.join(NPM_SUBCOMMANDS)}. "
            "Prefer the run_npm_script tool for package.json scripts."
        )
    before_separator = args[: args.index("--")] if "--" in args else args
    if hit := find_flag(before_separator, NPM_REFUSED):
        raise denied(f"npm {hit} is refused by the command policy (the script shell and lifecycle hooks are pinned).")
    if sub in ("run", "run-script", "rum", "urn") and len(positional) > 1:
        check_npm_script_name(positional[1])
    # Pin the script shell and disable pre/post hooks, whatever the project's .npmrc says.
    return ["--ignore-scripts", "--script-shell=/bin/sh", *args]


#: npm subcommands that run a program the caller names (a wrapper), refused also inside the sandbox.
NPM_WRAPPERS = ("exec", "x", "explore")
_NPM_PROGRAM_OPTIONS = ("--script-shell", "--shell", "--call")


def policy_npm_confined(args: list[str], ctx: PolicyContext) -> list[str]:
    """npm inside the sandbox: scripts, lifecycle hooks and installs run confined (installs through the registry-only
    egress, `shared.confinement.installers`), so one rule remains, the allow-list's: npm never runs a program the caller
    names (`npm exec`/`x`/`explore`, `--script-shell`, `--call`), as a wrapper would. Run the program itself."""
    before_separator = args[: args.index("--")] if "--" in args else args
    positional = [arg for arg in before_separator if not arg.startswith("-")]
    if positional and positional[0] in NPM_WRAPPERS:
        raise denied(
            f"npm {positional[0]} is refused: it runs a program the caller names, like a wrapper, which would bypass "
            "the allow-list of programs; run the program by name (a tool of node_modules/.bin runs as `npx TOOL` or "
            "by its own name)."
        )
    if hit := find_flag(before_separator, _NPM_PROGRAM_OPTIONS):
        raise denied(
            f"npm {hit} is refused: it names the program npm runs scripts with, which would bypass the allow-list of "
            "programs; package.json scripts run with /bin/sh."
        )
    return args


NPM_LIFECYCLE_SCRIPTS = frozenset(
    {
        "preinstall",
        "install",
        "postinstall",
        "preuninstall",
        "uninstall",
        "postuninstall",
        "prepublish",
        "preprepare",
        "prepare",
        "postprepare",
        "prepublishOnly",
        "prepack",
        "postpack",
        "publish",
        "postpublish",
        "preversion",
        "version",
        "postversion",
        "dependencies",
        "preshrinkwrap",
        "shrinkwrap",
        "postshrinkwrap",
    }
)
NPM_SCRIPT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9:._@/+-]{0,99}$")


def check_npm_script_name(name: str, scripts: Iterable[str] = ()) -> str:
    """A package.json script name that may be run on its own: not a lifecycle hook, not `preX`/`postX` of X."""
    if not NPM_SCRIPT_NAME.match(name):
        raise invalid(
            f"{name[:60]!r} is not a valid script name (letters, digits and `:._@/+-`, not starting with `-`)."
        )
    if name in NPM_LIFECYCLE_SCRIPTS:
        raise denied(
            f"{name!r} is an npm lifecycle script; lifecycle hooks are never run by this server (they run "
            "implicitly on install/publish). Run a regular script instead."
        )
    known = set(scripts)
    for prefix in ("pre", "post"):
        if name.startswith(prefix) and name[len(prefix) :] in known:
            raise denied(
                f"{name!r} is the {prefix}-hook of script {name[len(prefix) :]!r}; hooks are not run on their own "
                "(and never around the main script). Run the script itself."
            )
    return name
