"""install_package: npm or pip packages into a project inside the roots, without a shell.

Package specs follow a strict grammar (names, optional version or range; pip extras): no options
(`-x`), no URLs, no paths, no VCS references, no environment markers. The command is an argv list,
its working directory is the project directory (inside the roots), and it has a time limit. It runs inside the
OS sandbox (shared/sandbox.py): the system directories read-only, the project directory writable (the server's
own environment too when `pip_allow_server_environment` sends the install there), the network, a private
`/tmp` as its home; nothing else of the machine — so an sdist's `setup.py` or an npm install script cannot read
the user's files or the server's data.

Where pip installs: the project's virtual environment (the nearest directory with a `pyvenv.cfg`, `.venv` first, in
the project directory or above it inside its root; `shared.toolchains`) with its own interpreter (`<venv>/bin/python
-m pip`), whose base installation outside the roots is shown read-only only once verified to be one. If the
project has none, the install is refused unless `pip_allow_server_environment` is set, in which case
it goes into the server's own environment (`sys.executable -m pip`). npm installs into the project
(`node_modules`, `package.json`), with `--ignore-scripts` unless `npm_ignore_scripts` is false.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from mcp_sections.shared.egress_proxy import HostListPolicy, serving_unix
from mcp_sections.shared.errors import ErrorCode, ToolFailure, invalid_input
from mcp_sections.shared.guards.paths import PathGuard
from mcp_sections.shared.guards.urls import AllowList, UrlGuard
from mcp_sections.shared.sandbox import Confinement, Sandbox, egress_environment
from mcp_sections.shared.toolchains import find_venv, forbidden_prefixes, venv_base_prefix

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
    blocked: list[str]


def registry_policy(registries: Sequence[str], environment: Mapping[str, str]) -> HostListPolicy:
    """Where an installer may go: the configured registries and the ones the server's own environment names
    (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, npm_config_registry), whatever address their names resolve to (a registry
    name often resolves to a mirror or a proxy on the operator's network); a `*.suffix` entry stays subject to the URL
    guard (loopback and private addresses refused), and nothing else is reached."""
    entries = [*registries]
    for variable in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "npm_config_registry", "NPM_CONFIG_REGISTRY"):
        entries += environment.get(variable, "").split()
    hosts: list[str] = []
    ports: set[int] = {443}
    plain: list[tuple[str, int]] = []
    opened: list[str] = []
    for entry in entries:
        if "://" not in entry:  # a bare host (or *.suffix)
            hosts.append(entry)
            continue
        parts = urlsplit(entry)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            continue
        port = parts.port or (443 if parts.scheme == "https" else 80)
        if parts.scheme == "https":
            hosts.append(parts.hostname)
            ports.add(port)
        else:
            plain.append((parts.hostname, port))
        opened.append(f"{parts.hostname}:{port}")
    return HostListPolicy(hosts, ports, UrlGuard(AllowList.parse(opened)), plain_http=plain)


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
    registries: Sequence[str] = (),
) -> InstallOutcome:
    specs = validate_specs(manager, packages)
    project = guard.resolve(path, purpose="execute")
    readable: list[Path] = []
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
        venv = find_venv(project, guard)
        python = venv / "bin" / "python" if venv is not None else None
        if venv is not None:
            environment = str(venv)
            toolchain = venv_base_prefix(venv, forbidden_prefixes(guard))
            if toolchain is not None and not guard.contains(toolchain):
                readable.append(toolchain)
        elif pip_allow_server_environment:
            python = Path(sys.executable)
            environment = f"the server's environment ({sys.prefix})"
        else:
            raise ToolFailure(
                ErrorCode.VALIDATION_FAILED,
                f"no virtual environment found in {project} or above it (looked for a directory with pyvenv.cfg); "
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
    confined = sandbox.kind == "bubblewrap"  # Seatbelt and "off" keep the machine's network (see the README)
    with contextlib.ExitStack() as stack:
        socket = None
        proxy = None
        if confined:
            directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mcp-sections-egress-")))
            socket = directory / "egress.sock"
            proxy = stack.enter_context(serving_unix(registry_policy(registries, os.environ), socket))
            env.update(egress_environment())
        confinement = Confinement.within(guard, writable=writable, readable=readable, network=True, egress=socket)
        argv = sandbox.wrap(command, project, confinement)
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
        blocked = [str(refusal) for refusal in proxy.ledger.refusals] if proxy is not None else []
    output = completed.stdout.decode("utf-8", errors="replace")
    tail = output[-OUTPUT_TAIL:]
    if completed.returncode != 0:
        refused = (
            f" Destinations refused (only the configured registries are open): {'; '.join(blocked[:5])}."
            if blocked
            else ""
        )
        raise ToolFailure(
            ErrorCode.EXECUTION_FAILED,
            f"{manager} install failed with exit code {completed.returncode}.{refused} Last output:\n{tail}",
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
        blocked=blocked,
    )
