"""npm scripts: an existing package.json script only, never a lifecycle hook, the shell pinned to /bin/sh.

An npm script is shell text by nature; it is the project's text (package.json inside the roots), never
the caller's. The caller picks a script by name and may add arguments, which npm passes after `--`,
quoted for the shell. `--ignore-scripts` keeps npm from running the script's pre/post hooks, and
`--script-shell=/bin/sh` (plus the fixed environment) overrides any `script-shell` in a project .npmrc.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from mcp_sections.servers.shell_ops.policies.npm import check_npm_script_name
from mcp_sections.shared.confinement.toolchains import ProjectToolchain
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

MAX_PACKAGE_JSON_BYTES = 1024 * 1024


@dataclass(frozen=True)
class CheckedScript:
    """A run_npm_script call that passed every check (`ShellOps.check_npm_script`): where it runs, with which npm and
    project environment, the script's name and text, and the argv that runs it."""

    workdir: Path
    executable: str
    toolchain: ProjectToolchain
    name: str
    text: str
    argv: list[str]


def read_scripts(package_dir: Path) -> dict[str, str]:
    """The `scripts` table of `package_dir/package.json` (NOT_FOUND / VALIDATION_FAILED if unusable)."""
    path = package_dir / "package.json"
    if not path.is_file():
        raise ToolFailure(
            ErrorCode.NOT_FOUND,
            "no package.json in the working directory; pass `cwd` pointing at the package's directory.",
        )
    if path.stat().st_size > MAX_PACKAGE_JSON_BYTES:
        raise ToolFailure(ErrorCode.MAX_LIMIT_EXCEEDED, "package.json is larger than 1 MiB; refusing to parse it.")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ToolFailure(ErrorCode.VALIDATION_FAILED, f"package.json is not valid JSON ({exc}).") from None
    scripts = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(scripts, dict):
        return {}
    return {str(name): str(text) for name, text in scripts.items() if isinstance(text, str)}


def checked_script(name: str, scripts: dict[str, str]) -> str:
    """`name` if it is a runnable script of this package: validated, existing, not a hook."""
    check_npm_script_name(name, scripts)
    if name not in scripts:
        available = ", ".join(sorted(n for n in scripts if _is_runnable(n, scripts))[:50]) or "(none)"
        raise ToolFailure(ErrorCode.NOT_FOUND, f"package.json has no script {name!r}; available scripts: {available}.")
    return name


def _is_runnable(name: str, scripts: dict[str, str]) -> bool:
    try:
        check_npm_script_name(name, scripts)
    except ToolFailure:
        return False
    return True


def npm_argv(npm: str, script: str, args: list[str]) -> list[str]:
    """`npm run-script` with hooks disabled, the shell pinned, and the caller's arguments after `--`."""
    argv = [npm, "run-script", "--ignore-scripts", "--script-shell=/bin/sh", script]  # name never starts with -
    if args:
        argv += ["--", *args]
    return argv
