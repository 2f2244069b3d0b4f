"""Installers and their way out: one implementation for shell_ops' `run_command` and file_ops' `install_package`.

An installer is the only kind of program that gets a network: a pip, uv, poetry, npm, pnpm or yarn command that fetches
packages (`installer_kind` recognises one from its argv). Inside bubblewrap its only way out is an egress proxy that
opens the configured registries alone (`registry_egress`: `shared.confinement.egress_proxy` on a Unix socket, reached
through `shared.confinement.egress_bridge`); whatever else it tries is refused and listed (`Egress.blocked`). Every
other program has no network at all. What an install runs (an sdist's `setup.py`, a build backend, the project's own
code for `pip install -e .`, npm scripts when enabled) runs in the same sandbox with the same way out.

Seatbelt (macOS) and `sandbox = "off"` cannot narrow a network to some hosts: there an installer keeps the machine's
network (`Egress.socket` is None), as the README says.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from mcp_sections.shared.confinement.egress_proxy import EgressProxy, HostListPolicy, serving_unix
from mcp_sections.shared.confinement.guards.urls import AllowList, UrlGuard
from mcp_sections.shared.confinement.sandbox import egress_environment

#: Where installers may go by default: PyPI (its index and its files), the npm registry and yarn's name for it.
DEFAULT_REGISTRIES = (
    "https://pypi.org",
    "https://files.pythonhosted.org",
    "https://registry.npmjs.org",
    "https://registry.yarnpkg.com",
)

#: Variables of the server's own environment that name a registry; their hosts are opened too.
REGISTRY_VARIABLES = (
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "UV_INDEX_URL",
    "UV_EXTRA_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "npm_config_registry",
    "NPM_CONFIG_REGISTRY",
)

#: What an installer inherits from the server's environment: how to reach the registries (the operator's index,
#: certificates). Nothing else: the installer runs code that comes from the registry or from the project, and must
#: not see the server's API keys and tokens.
REGISTRY_ENV_KEEP = frozenset(
    {*REGISTRY_VARIABLES, "PIP_TRUSTED_HOST", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "PIP_CERT"}
    | {"NODE_EXTRA_CA_CERTS"}
)
#: Settings every installer gets: never a question (there is no terminal), and uv trusts the system's certificates
#: as pip and npm do (a company's TLS-inspecting proxy).
INSTALLER_SETTINGS = {
    "PIP_NO_INPUT": "1",
    "npm_config_yes": "true",
    "CI": "1",
    "UV_SYSTEM_CERTS": "1",
    "UV_NATIVE_TLS": "1",
}


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_PIP = _words("install download wheel index")
_UV = _words("sync lock add remove venv export tree")
_UV_PIP = _words("install sync compile")
_NPM = _words(
    "install i in ins inst insta instal isnt isnta isntal isntall add ci clean-install ic install-clean isntall-clean "
    "install-test it install-ci-test cit update up upgrade udpate uninstall unlink remove rm r un dedupe ddp prune "
    "outdated view v info show audit"
)
_PNPM = _words(
    "install i add update up upgrade remove rm uninstall un fetch import dedupe install-test it outdated audit"
)
_YARN = _words("install add upgrade up remove import outdated audit dedupe info")
_POETRY = _words("install lock add remove update sync")
#: Options of each family that take a value, to find the subcommand after them.
_VALUE_OPTIONS = {
    "pip": _words(
        "--log --cache-dir --proxy --retries --timeout --exists-action --cert --client-cert --python --use-feature "
        "--use-deprecated --trusted-host --keyring-provider"
    ),
    "uv": _words("--directory --project --cache-dir --config-file --color --python-preference --allow-insecure-host"),
    "poetry": _words("-C --directory -P --project"),
    "npm": _words("--prefix -C --workspace -w --loglevel --registry --cache"),
}
_PYTHON_VALUE_FLAGS = frozenset("WX")


def installer_kind(family: str, args: Sequence[str]) -> str | None:
    """Which installer `args` make of a program of `family` (pip, python, uv, poetry, npm, pnpm, yarn), or None when
    the command fetches nothing: `pip install -e .`, `python -m pip install -r requirements.txt`, `uv sync`,
    `poetry install`, `npm ci`, a bare `yarn`."""
    args = list(args)
    if family == "python":
        module, rest = _python_module(args)
        if module in ("pip", "uv", "poetry"):
            return installer_kind(module, rest)
        return None
    sub, rest = _subcommand(family, args)
    if family == "pip":
        return "pip" if sub in _PIP else None
    if family == "uv":
        if sub == "pip":
            inner, _ = _subcommand("uv", rest)
            return "uv" if inner in _UV_PIP else None
        return "uv" if sub in _UV else None
    if family == "poetry":
        return "poetry" if sub in _POETRY else None
    if family == "npm":
        return "npm" if sub in _NPM else None
    if family == "pnpm":
        return "pnpm" if sub in _PNPM else None
    if family == "yarn":  # a bare `yarn` installs
        bare = sub is None and not any(arg in ("--version", "-v", "--help", "-h") for arg in args)
        return "yarn" if bare or sub in _YARN else None
    return None


def _subcommand(family: str, args: Sequence[str]) -> tuple[str | None, list[str]]:
    values = _VALUE_OPTIONS.get(family, frozenset())
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return None, []
        if not arg.startswith("-"):
            return arg, list(args[index + 1 :])
        index += 2 if arg in values else 1
    return None, []


def _python_module(args: Sequence[str]) -> tuple[str | None, list[str]]:
    """The module of `python [options] -m MODULE ARGS` and its arguments (None: a script, `-c`, or nothing)."""
    index = 0
    while index < len(args):
        arg = args[index]
        if not arg.startswith("-") or arg in ("-", "--"):
            return None, []
        cluster = arg[1:] if not arg.startswith("--") else ""
        for position, letter in enumerate(cluster):
            rest = cluster[position + 1 :]
            if letter == "m":
                if rest:
                    return rest, list(args[index + 1 :])
                return (args[index + 1], list(args[index + 2 :])) if index + 1 < len(args) else (None, [])
            if letter == "c":
                return None, []
            if letter in _PYTHON_VALUE_FLAGS:
                if not rest:
                    index += 1
                break
        index += 1
    return None, []


def registry_policy(registries: Sequence[str], environment: Mapping[str, str]) -> HostListPolicy:
    """Where an installer may go: the configured registries and the ones the server's own environment names
    (`REGISTRY_VARIABLES`), whatever address their names resolve to (a registry name often resolves to a mirror or a
    proxy on the operator's network); a `*.suffix` entry stays subject to the URL guard (loopback and private
    addresses refused), and nothing else is reached."""
    entries = [*registries]
    for variable in REGISTRY_VARIABLES:
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


def registry_environment(server_environment: Mapping[str, str]) -> dict[str, str]:
    """What an installer takes from the server's environment (`REGISTRY_ENV_KEEP`), with `INSTALLER_SETTINGS`."""
    kept = {key: value for key, value in server_environment.items() if key in REGISTRY_ENV_KEEP}
    return {**kept, **INSTALLER_SETTINGS}


def npm_pinned_programs() -> list[str]:
    """Command-line values for every npm setting that names a program, so a project's `.npmrc` cannot swap in its own
    (`git=./evil.sh` with a `git+` dependency would otherwise run it)."""
    git = shutil.which("git") or "git"
    return [f"--git={git}", "--script-shell=/bin/sh", "--shell=/bin/sh", "--editor=true", "--browser=false"]


@dataclass
class Egress:
    """One installer run's way out: the proxy's Unix socket to bind into the sandbox (None: the machine's network, with
    Seatbelt or no sandbox) and the variables that lead the installer to it."""

    socket: Path | None = None
    environment: dict[str, str] = field(default_factory=dict)
    proxy: EgressProxy | None = None

    def blocked(self) -> list[str]:
        """What the installer tried beyond the registries (refused by the proxy), in order."""
        return [str(refusal) for refusal in self.proxy.ledger.refusals] if self.proxy is not None else []

    def refused_sentence(self) -> str:
        """A sentence for a failed install naming what was refused ('' when nothing was)."""
        blocked = self.blocked()
        if not blocked:
            return ""
        return f" Destinations refused (only the configured registries are open): {'; '.join(blocked[:5])}."


@contextlib.contextmanager
def registry_egress(
    sandbox_kind: str, registries: Sequence[str], server_environment: Mapping[str, str]
) -> Iterator[Egress]:
    """The way out of one installer run, for as long as the block lasts: under bubblewrap an egress proxy opening only
    `registries` (and those `server_environment` names); elsewhere the machine's network."""
    if sandbox_kind != "bubblewrap":
        yield Egress()
        return
    with tempfile.TemporaryDirectory(prefix="mcp-sections-egress-") as directory:
        socket = Path(directory) / "egress.sock"
        with serving_unix(registry_policy(registries, server_environment), socket) as proxy:
            yield Egress(socket, egress_environment(), proxy)
