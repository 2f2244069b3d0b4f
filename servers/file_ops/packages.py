"""install_package: npm or pip packages into a project inside the roots, without a shell.

Package specs follow a strict grammar (names, optional version or range; pip extras): no options
(`-x`), no URLs, no paths, no VCS references, no environment markers. The command is an argv list,
its working directory is the project directory (inside the roots), and it has a time limit. It runs inside the
OS sandbox (shared/sandbox.py): the system directories read-only, the project directory writable (the server's
own environment too when `pip_allow_server_environment` sends the install there), the network, a private
`/tmp` as its home; nothing else of the machine — so an sdist's `setup.py` or an npm install script cannot read
the user's files or the server's data.

Where pip installs: the project's virtual environment (`.venv`, `venv` or `env` in the project
directory, containing `pyvenv.cfg`) with its own interpreter (`<venv>/bin/python -m pip`). If the
project has none, the install is refused unless `pip_allow_server_environment` is set, in which case
it goes into the server's own environment (`sys.executable -m pip`). npm installs into the project
(`node_modules`, `package.json`), with `--ignore-scripts` unless `npm_ignore_scripts` is false.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mcp_sections.shared.errors import ErrorCode, ToolFailure, invalid_input
from mcp_sections.shared.guards.paths import PathGuard
from mcp_sections.shared.sandbox import Confinement, Sandbox
from mcp_sections.shared.secret_files import hidden_from_programs

NPM_NAME = r"(?:@[a-z0-9][a-z0-9._~-]{0,100}/)?[a-z0-9][a-z0-9._~-]{0,213}"
NPM_VERSION = r"[0-9A-Za-z^~<>=*.+-]{1,64}"
NPM_SPEC = re.compile(rf"^(?P<name>{NPM_NAME})(?:@(?P<version>{NPM_VERSION}))?$")

PIP_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?"
PIP_EXTRAS = rf"\[\s*{PIP_NAME}(?:\s*,\s*{PIP_NAME}){{0,15}}\s*\]"
PIP_VERSION = r"[0-9A-Za-z.*+!_-]{1,64}"
PIP_CLAUSE = rf"(?:===|==|!=|~=|>=|<=|>|<)\s*{PIP_VERSION}"
PIP_SPEC = re.compile(
    rf"^(?P<name>{PIP_NAME})\s*(?P<extras>{PIP_EXTRAS})?\s*(?P<version>{PIP_CLAUSE}(?:\s*,\s*{PIP_CLAUSE}){{0,7}})?$"
)

OUTPUT_TAIL = 4000
VENV_NAMES = (".venv", "venv", "env")


def validate_specs(manager: str, specs: list[str]) -> list[str]:
    """Each spec must match the manager's grammar; the message names the first bad one and why."""
    grammar = NPM_SPEC if manager == "npm" else PIP_SPEC
    cleaned = []
    for spec in specs:
        text = spec.strip()
        if not text or text.startswith("-"):
            raise invalid_input(f"{spec[:80]!r} is not a package spec (options are not accepted).")
        if any(token in text for token in ("://", "/", "\\", "\x00")) and not (
            manager == "npm" and text.startswith("@") and text.count("/") == 1 and "://" not in text
        ):
            raise invalid_input(f"{spec[:80]!r} looks like a URL or a path; only registry package names are accepted.")
        if not grammar.match(text):
            example = (
                "lodash, @types/node@^20, left-pad@1.3.0"
                if manager == "npm"
                else "requests, rich>=13, uvicorn[standard]==0.30.0"
            )
            raise invalid_input(
                f"{spec[:80]!r} is not a valid {manager} package spec; use a name with an optional version "
                f"(for example {example}). URLs, paths, options and markers are refused."
            )
        cleaned.append(text)
    if len(set(cleaned)) != len(cleaned):
        raise invalid_input("the same package is listed twice.")
    return cleaned


#: What an installer inherits from the server's environment: where programs are, the locale, and how to reach
#: the registries (proxies, CA bundles, the operator's index). Nothing else: the installer runs code that comes
#: from the registry (sdists' setup.py, npm scripts when enabled) or from the project (its venv's python), and
#: must not see the server's API keys and tokens.
INSTALL_ENV_KEEP = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT"}
    | {"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "all_proxy"}
    | {"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "PIP_CERT", "NODE_EXTRA_CA_CERTS"}
    | {"PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "npm_config_registry", "NPM_CONFIG_REGISTRY"}
)


def npm_pinned_programs() -> list[str]:
    """Command-line values for every npm setting that names a program, so a project's `.npmrc` cannot
    swap in its own (`git=./evil.sh` with a `git+` dependency would otherwise run it)."""
    git = shutil.which("git") or "git"
    return [f"--git={git}", "--script-shell=/bin/sh", "--shell=/bin/sh", "--editor=true", "--browser=false"]


def install_environment(server_environment: Mapping[str, str]) -> dict[str, str]:
    """The environment of an install: the kept variables of the server's, plus non-interactive settings."""
    env = {key: value for key, value in server_environment.items() if key in INSTALL_ENV_KEEP}
    env.update({"PIP_NO_INPUT": "1", "npm_config_yes": "true", "CI": "1"})
    return env


def find_project_venv(guard: PathGuard, project: Path) -> Path | None:
    """The project's virtual environment interpreter, if the venv directory itself lies inside the roots."""
    for name in VENV_NAMES:
        venv = project / name
        if os.path.islink(venv) or not (venv / "pyvenv.cfg").is_file() or not guard.contains(venv):
            continue
        python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
        if os.path.exists(python):
            return python
    return None


@dataclass
class InstallOutcome:
    manager: str
    packages: list[str]
    command: list[str]
    cwd: str
    environment: str
    exit_code: int
    output: str
    sandbox: str
    warning: str | None


def install_package(
    guard: PathGuard,
    manager: str,
    packages: list[str],
    path: str,
    *,
    dev: bool,
    timeout_seconds: float,
    npm_ignore_scripts: bool,
    pip_allow_server_environment: bool,
    sandbox: Sandbox,
) -> InstallOutcome:
    specs = validate_specs(manager, packages)
    project = guard.resolve(path, purpose="execute")
    if not project.is_dir():
        raise invalid_input(f"{path!r} is not a directory; `path` is the project directory.")
    if manager == "npm":
        npm = shutil.which("npm")
        if npm is None:
            raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, "npm is not installed on the server's machine (not on PATH).")
        command = [npm, "install", "--no-audit", "--no-fund", "--no-progress", *npm_pinned_programs()]
        if npm_ignore_scripts:
            command.append("--ignore-scripts")
        if dev:
            command.append("--save-dev")
        command += ["--", *specs]
        environment = f"{project}/node_modules"
    else:
        if dev:
            raise invalid_input("dev=true is for npm; pip has no dev dependencies (omit it).")
        python = find_project_venv(guard, project)
        if python is not None:
            environment = str(python.parent.parent)
        elif pip_allow_server_environment:
            python = Path(sys.executable)
            environment = f"the server's environment ({sys.prefix})"
        else:
            raise ToolFailure(
                ErrorCode.VALIDATION_FAILED,
                f"no virtual environment found in {project} (looked for {', '.join(VENV_NAMES)} with pyvenv.cfg); "
                "create one first (python -m venv .venv), or ask the operator to enable "
                "pip_allow_server_environment.",
            )
        command = [
            str(python),
            "-m",
            "pip",
            "install",
            "--no-input",
            "--disable-pip-version-check",
            "--",
            *specs,
        ]
    env = install_environment(os.environ)
    writable = [project]
    if environment.startswith("the server's environment"):
        writable.append(Path(sys.prefix))
    if sandbox.kind != "off":
        env.update({"HOME": "/tmp", "npm_config_cache": "/tmp/.npm", "PIP_CACHE_DIR": "/tmp/.pip-cache"})
    argv = sandbox.wrap(
        command,
        project,
        Confinement(writable=tuple(writable), network=True, hidden=hidden_from_programs(guard, writable)),
    )
    try:
        completed = subprocess.run(
            argv,
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout_seconds,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ToolFailure(
            ErrorCode.TIMEOUT,
            f"{manager} install did not finish within {timeout_seconds:g}s; it was stopped. Retry, or install "
            "fewer packages at once.",
        ) from None
    except OSError as exc:
        raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, f"{manager} could not be started ({exc.strerror}).") from None
    output = completed.stdout.decode("utf-8", errors="replace")
    tail = output[-OUTPUT_TAIL:]
    if completed.returncode != 0:
        raise ToolFailure(
            ErrorCode.EXECUTION_FAILED,
            f"{manager} install failed with exit code {completed.returncode}. Last output:\n{tail}",
        )
    return InstallOutcome(
        manager=manager,
        packages=specs,
        command=command,
        cwd=str(project),
        environment=environment,
        exit_code=completed.returncode,
        output=tail,
        sandbox=sandbox.kind,
        warning=sandbox.warning,
    )
