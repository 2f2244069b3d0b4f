"""install_package: npm or pip packages into a project inside the roots, without a shell.

What it installs: registry packages, whose specs follow a strict grammar (names, optional version or range; pip
extras; no options, URLs, VCS references or markers); for pip also the project itself or another local project
inside the roots (`.`, `./lib`, `.[test]`; `editable` installs them with `-e`, as `pip install -e ".[test]"` does) and
requirements files inside the roots (`-r requirements.txt`); for npm with no package, the project's own dependencies
(`npm install`). The command is an argv list, its working directory is the project directory (inside the roots), and
it has a time limit.

It runs inside the OS sandbox (shared/confinement/sandbox.py): the system directories read-only; the project directory,
its venv and the local projects it installs writable (the server's own environment too when
`pip_allow_server_environment` sends the install there); a private `/tmp` as its home; nothing else of the machine — so
an sdist's `setup.py`, the project's build backend or an npm install script cannot read the user's files or the server's
data. Its only way out is the registry-only egress proxy of `shared.confinement.installers`, the same as an installer
run_command starts: one implementation of what an installer may reach, for both tools.

Where pip installs: the project's virtual environment (the nearest directory with a `pyvenv.cfg`, `.venv` first, in
the project directory or above it inside its root; `shared.confinement.toolchains`) with its own interpreter
(`<venv>/bin/python -m pip`), whose base installation outside the roots is shown read-only only once verified to be one.
If the project has none, the install is refused unless `pip_allow_server_environment` is set, in which case
it goes into the server's own environment (`sys.executable -m pip`). npm installs into the project
(`node_modules`, `package.json`), with `--ignore-scripts` unless `npm_ignore_scripts` is false.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.confinement.installers import npm_pinned_programs, registry_egress, registry_environment
from mcp_sections.shared.confinement.sandbox import Confinement, Sandbox
from mcp_sections.shared.confinement.toolchains import find_venv, forbidden_prefixes, venv_base_prefix
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure, invalid_input
from mcp_sections.shared.ground.locations import is_inside

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


#: A local project for pip: a path inside the roots (`.`, `./lib`, `../other`, `sub/pkg`) with optional extras.
LOCAL_SPEC = re.compile(rf"^(?P<path>(?:\.{{1,2}}|[^\s\[\]]*/[^\s\[\]]*))\s*(?P<extras>{PIP_EXTRAS})?$")


#: Built archives: a local spec names a project directory, which pip builds in the sandbox.
ARCHIVES = (".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".egg")


def is_local(manager: str, spec: str) -> bool:
    """Whether a pip spec names a local project (a path: `.`, `..`, or with a `/`) rather than a registry package."""
    text = spec.strip()
    return manager == "pip" and "://" not in text and (text.startswith(".") or "/" in text.split("[", 1)[0])


def validate_specs(manager: str, specs: list[str]) -> list[str]:
    """Each registry spec must match the manager's grammar, each local pip spec the path grammar (its path is checked
    against the roots by `local_projects`); the message names the first bad one and why."""
    grammar = NPM_SPEC if manager == "npm" else PIP_SPEC
    cleaned = []
    for spec in specs:
        text = spec.strip()
        if not text or text.startswith("-"):
            raise invalid_input(f"{spec[:80]!r} is not a package spec (options are not accepted).")
        if "\x00" in text:
            raise invalid_input(f"{spec[:80]!r} contains a NUL byte.")
        if is_local(manager, text):
            if not LOCAL_SPEC.match(text) or text.split("[", 1)[0].rstrip().endswith(ARCHIVES):
                raise invalid_input(
                    f"{spec[:80]!r} is not a local project spec; give a project directory inside the roots with "
                    "optional extras, e.g. `.`, `.[test]` or `./lib[dev]` (not a built archive)."
                )
            cleaned.append(text)
            continue
        if any(token in text for token in ("://", "/", "\\")) and not (
            manager == "npm" and text.startswith("@") and text.count("/") == 1 and "://" not in text
        ):
            raise invalid_input(
                f"{spec[:80]!r} looks like a URL or a path; give registry package names"
                + (", or a local project inside the roots (`.`, `./lib[test]`)." if manager == "pip" else ".")
            )
        if not grammar.match(text):
            example = (
                "lodash, @types/node@^20, left-pad@1.3.0"
                if manager == "npm"
                else "requests, rich>=13, uvicorn[standard]==0.30.0, or a local project: ., .[test], ./lib"
            )
            raise invalid_input(
                f"{spec[:80]!r} is not a valid {manager} package spec; use a name with an optional version "
                f"(for example {example}). URLs, options and markers are refused."
            )
        cleaned.append(text)
    if len(set(cleaned)) != len(cleaned):
        raise invalid_input("the same package is listed twice.")
    return cleaned


def local_projects(guard: PathGuard, project: Path, specs: Sequence[str]) -> list[tuple[Path, str]]:
    """(directory, `directory[extras]` for pip) of each local spec: a directory inside the roots, relative to the
    project directory, holding a `pyproject.toml` or `setup.py`."""
    found = []
    for spec in specs:
        match = LOCAL_SPEC.match(spec.strip())
        assert match is not None  # validate_specs checked it
        candidate = project / match.group("path")
        directory = guard.resolve(str(candidate), purpose="list") if candidate.exists() else candidate
        if not directory.is_dir() or not any((directory / name).is_file() for name in ("pyproject.toml", "setup.py")):
            raise invalid_input(
                f"{spec[:80]!r} is not a Python project directory inside the roots (a directory with a pyproject.toml "
                "or setup.py, relative to `path`); a built archive installs from its project directory instead."
            )
        extras = re.sub(r"\s+", "", match.group("extras") or "")
        found.append((directory, f"{directory}{extras}"))
    return found


#: What an installer inherits from the server's environment: where programs are, the locale, the machine's proxies
#: (used where the sandbox cannot narrow the network: Seatbelt, `sandbox = "off"`) and how to reach the registries
#: (`shared.confinement.installers.REGISTRY_ENV_KEEP`). Nothing else: the installer runs code that comes from the
#: registry or from the project, and must not see the server's API keys and tokens.
INSTALL_ENV_KEEP = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT"}
    | {"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "all_proxy"}
)


def install_environment(server_environment: Mapping[str, str]) -> dict[str, str]:
    """The environment of an install: the kept variables of the server's, its registries' and the installers'
    non-interactive settings (`shared.confinement.installers.registry_environment`)."""
    env = {key: value for key, value in server_environment.items() if key in INSTALL_ENV_KEEP}
    return {**env, **registry_environment(server_environment)}


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


@dataclass
class _Plan:
    """What an install runs and what its sandbox shows: the command, where it installs (for the result), the
    directories it writes and those it only reads."""

    command: list[str]
    environment: str
    writable: list[Path]
    readable: list[Path] = field(default_factory=list)


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
    editable: bool = False,
    requirements: Sequence[str] = (),
) -> InstallOutcome:
    specs = validate_specs(manager, packages)
    project = guard.resolve(path, purpose="execute")
    if not project.is_dir():
        raise invalid_input(f"{path!r} is not a directory; `path` is the project directory.")
    if manager == "npm":
        plan = _npm_plan(
            project, specs, dev=dev, editable=editable, requirements=requirements, ignore_scripts=npm_ignore_scripts
        )
    else:
        plan = _pip_plan(
            guard,
            project,
            specs,
            dev=dev,
            editable=editable,
            requirements=requirements,
            allow_server_environment=pip_allow_server_environment,
        )
    completed, blocked, refused = _run_confined(
        guard, manager, project, plan, sandbox=sandbox, registries=registries, timeout_seconds=timeout_seconds
    )
    output = completed.stdout.decode("utf-8", errors="replace")
    tail = output[-OUTPUT_TAIL:]
    if completed.returncode != 0:
        raise ToolFailure(
            ErrorCode.EXECUTION_FAILED,
            f"{manager} install failed with exit code {completed.returncode}.{refused} Last output:\n{tail}",
        )
    return InstallOutcome(
        manager=manager,
        packages=[*specs, *(f"-r {requirement}" for requirement in requirements)],
        command=plan.command,
        cwd=str(project),
        environment=plan.environment,
        exit_code=completed.returncode,
        output=tail,
        sandbox=sandbox.kind,
        warning=sandbox.warning,
        blocked=blocked,
    )


def _npm_plan(
    project: Path, specs: list[str], *, dev: bool, editable: bool, requirements: Sequence[str], ignore_scripts: bool
) -> _Plan:
    """npm install of the specs (or the project's own dependencies) into the project."""
    if editable or requirements:
        raise invalid_input(
            "editable and requirements are for pip; npm installs names, or the project's own dependencies when "
            "`packages` is empty."
        )
    npm = shutil.which("npm")
    if npm is None:
        raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, "npm is not installed on the server's machine (not on PATH).")
    command = [npm, "install", "--no-audit", "--no-fund", "--no-progress", *npm_pinned_programs()]
    if ignore_scripts:
        command.append("--ignore-scripts")
    if dev:
        command.append("--save-dev")
    if specs:
        command += ["--", *specs]
    return _Plan(command, f"{project}/node_modules", [project])


def _pip_plan(
    guard: PathGuard,
    project: Path,
    specs: list[str],
    *,
    dev: bool,
    editable: bool,
    requirements: Sequence[str],
    allow_server_environment: bool,
) -> _Plan:
    """pip install of registry packages, local projects and requirements files, with the project's venv's pip."""
    local = [spec for spec in specs if is_local("pip", spec)]
    if dev:
        raise invalid_input("dev=true is for npm; pip has no dev dependencies (omit it).")
    if not specs and not requirements:
        raise invalid_input(
            "name what to install: registry packages, a local project (`.`, `.[test]`) or a requirements file."
        )
    if editable and not local:
        raise invalid_input("editable=true installs local projects (`.`, `./lib[test]`); none is listed.")
    projects = local_projects(guard, project, local)
    files = [guard.resolve(str(project / requirement), purpose="read") for requirement in requirements]
    python, plan = _pip_environment(guard, project, allow_server_environment)
    targets: list[str] = []
    for directory, target in projects:  # a build writes its egg-info and build/ there
        plan.writable.append(directory)
        targets += ["-e", target] if editable else [target]
    for file in files:
        plan.readable.append(file.parent)
        targets += ["-r", str(file)]
    names = [spec for spec in specs if spec not in local]
    plan.command = [str(python), "-m", "pip", "install", "--no-input", "--disable-pip-version-check", *targets]
    if names:
        plan.command += ["--", *names]
    return plan


def _pip_environment(guard: PathGuard, project: Path, allow_server_environment: bool) -> tuple[Path, _Plan]:
    """The interpreter whose pip installs, and a plan (no command yet) that writes the project and its environment:
    the project's venv (its base installation read-only), else the server's own when allowed."""
    venv = find_venv(project, guard)
    if venv is not None:
        plan = _Plan([], str(venv), [project, venv])
        toolchain = venv_base_prefix(venv, forbidden_prefixes(guard))
        if toolchain is not None and not guard.contains(toolchain):
            plan.readable.append(toolchain)
        return venv / "bin" / "python", plan
    if allow_server_environment:
        return Path(sys.executable), _Plan([], f"the server's environment ({sys.prefix})", [project, Path(sys.prefix)])
    raise ToolFailure(
        ErrorCode.VALIDATION_FAILED,
        f"no virtual environment found in {project} or above it (looked for a directory with pyvenv.cfg); "
        "create one first (python -m venv .venv), or ask the operator to enable "
        "pip_allow_server_environment.",
    )


def _run_confined(
    guard: PathGuard,
    manager: str,
    project: Path,
    plan: _Plan,
    *,
    sandbox: Sandbox,
    registries: Sequence[str],
    timeout_seconds: float,
) -> tuple[subprocess.CompletedProcess[bytes], list[str], str]:
    """Run the plan's command in the sandbox, its only way out the registries' egress proxy; returns what it did,
    what the proxy blocked and the sentence that says so."""
    env = install_environment(os.environ)
    if sandbox.kind != "off":
        env.update({"HOME": "/tmp", "npm_config_cache": "/tmp/.npm", "PIP_CACHE_DIR": "/tmp/.pip-cache"})
    writable = list(dict.fromkeys(plan.writable))
    readable = [
        place for place in dict.fromkeys(plan.readable) if not any(is_inside(str(place), str(w)) for w in writable)
    ]
    with registry_egress(
        sandbox.kind, registries, os.environ
    ) as egress:  # its only way out: shared.confinement.installers
        env.update(egress.environment)
        confinement = Confinement.within(
            guard, writable=writable, readable=readable, network=True, egress=egress.socket
        )
        try:
            with sandbox.spawning(plan.command, project, confinement) as spawn:
                completed = subprocess.run(
                    spawn.argv,
                    cwd=project,
                    env={**env, **spawn.environment},
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    timeout=timeout_seconds,
                    check=False,
                    pass_fds=spawn.pass_fds,
                )
        except subprocess.TimeoutExpired:
            raise ToolFailure(
                ErrorCode.TIMEOUT,
                f"{manager} install did not finish within {timeout_seconds:g}s; it was stopped. Retry, or install "
                "fewer packages at once.",
            ) from None
        except OSError as exc:
            raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, f"{manager} could not be started ({exc.strerror}).") from None
        return completed, egress.blocked(), egress.refused_sentence()
