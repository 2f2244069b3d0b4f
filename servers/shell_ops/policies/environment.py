"""Which environment variables a caller may give a program (`env` of run_command and start_process).

Every program gets a fixed environment (processes.child_environment); a test run or a dev server often needs a little
more (`PYTHONPATH=src`, `PYTEST_ADDOPTS`, `NODE_ENV`, `PORT`). Inside the OS sandbox a variable changes only what the
program does there, which the sandbox confines, so any name is accepted except `RESERVED`: the few that reach what runs
outside the sandbox or the suite's own mechanisms. With the sandbox off the variables are the only layer again: names
come from the operator's list (`process_environment`), and names that change what loads (`NEVER_SET`) are refused
whatever the list says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from mcp_sections.servers.shell_ops.policies.syntax import denied, invalid

DEFAULT_PROCESS_ENVIRONMENT = (
    "PORT",
    "HOST",
    "NODE_ENV",
    "DEBUG",
    "LOG_LEVEL",
    "TZ",
    "FORCE_COLOR",
    "PYTHONWARNINGS",
    "PYTHONHASHSEED",
    "PYTHONFAULTHANDLER",
    "PYTHONDONTWRITEBYTECODE",
    "RUST_LOG",
    "RUST_BACKTRACE",
    "DJANGO_SETTINGS_MODULE",
    "FLASK_APP",
    "FLASK_DEBUG",
)
#: Never added by a caller with the sandbox off: they decide which programs, libraries, modules or configuration load
#: (inside the sandbox they only change what the program does there).
NEVER_SET = re.compile(
    r"^(?:PATH|HOME|TMPDIR|SHELL|ENV|BASH_ENV|IFS|CDPATH|VIRTUAL_ENV|LD_\w*|DYLD_\w*|PYTHONPATH|PYTHONHOME|"
    r"PYTHONSTARTUP|PYTHONUSERBASE|PYTHONEXECUTABLE|PYTHONNOUSERSITE|PYTHONSAFEPATH|PYTEST_\w*|NODE_OPTIONS|"
    r"NODE_PATH|NODE_EXTRA_CA_CERTS|GIT_\w*|NPM_\w*|UV_\w*|PIP_\w*|CARGO_\w*|RUSTC\w*|RUSTFLAGS|GO(?:FLAGS|PATH|ROOT|ENV|TOOLCHAIN|PROXY|CACHE|MODCACHE|BIN|INSECURE|NOSUMDB|PRIVATE)|CGO_\w*|"
    r"PERL5\w*|RUBY\w*|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|LESSOPEN|PAGER|EDITOR|VISUAL|MAKEFLAGS|MFLAGS|CC|CXX|"
    r"LANG|LC_\w*|TERM|CI|NO_COLOR)$",
    re.IGNORECASE,
)
#: What configures the dynamic loader and C library: with bubblewrap a caller's variables are set inside the sandbox
#: only (`Sandbox.spawning`), where they change the program alone; a launcher that runs on the host with the program's
#: environment (sandbox-exec; no sandbox at all) would load them itself, before it confines anything.
LOADER = re.compile(r"^(?:LD_\w*|DYLD_\w*|GLIBC_TUNABLES|GCONV_PATH|LOCPATH|NLSPATH|MALLOC_\w*)$", re.IGNORECASE)
LOADER_REASON = (
    "it configures the dynamic loader and C library, and the sandbox launcher here (sandbox-exec, or none) runs on the "
    "host with the program's environment before it confines anything"
)
#: Refused in every mode, each group with its reason (the README's table of remaining rules lists them).
RESERVED: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"^(?:(?:HTTPS?|ALL|NO)_PROXY|npm_config_(?:https_)?proxy|npm_config_noproxy)$", re.IGNORECASE),
        "it is an installer's only way out: the registry-only egress proxy the suite sets",
    ),
    (
        re.compile(r"^(?:PATH|HOME|TMPDIR)$"),
        "the suite sets it: programs are found on the fixed search path (the project environment first) and each "
        "gets a private home",
    ),
)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
MAX_VALUE = 4096
MAX_VARIABLES = 32


def reserved_reason(name: str, *, set_inside: bool = False) -> str | None:
    """Why `name` is never set by a caller (None: it may be, inside the sandbox); `set_inside`: the variables reach the
    program only, never its launcher (bubblewrap's `--setenv`), so the loader's may be set."""
    if not set_inside and LOADER.match(name):
        return LOADER_REASON
    return next((why for pattern, why in RESERVED if pattern.match(name)), None)


def check_environment_names(names: Iterable[str]) -> list[str]:
    """A configured list of names: valid, none of NEVER_SET (ValueError)."""
    result: list[str] = []
    for raw in names:
        name = raw.strip()
        if not _NAME.match(name):
            raise ValueError(f"environment variable name {name[:64]!r} is not valid")
        if NEVER_SET.match(name) or reserved_reason(name):
            raise ValueError(f"environment variable {name!r} can never be set by a caller (it changes what loads)")
        if name not in result:
            result.append(name)
    return result


def checked_environment(
    additions: Mapping[str, str], allowed: Iterable[str], *, confined: bool = True, set_inside: bool = False
) -> dict[str, str]:
    """The caller's variables, checked: inside the sandbox (`confined`) any valid name but `RESERVED` (and the loader's
    unless `set_inside`: bubblewrap sets them inside only); with the sandbox off, only `allowed` names
    (PERMISSION_DENIED names the setting otherwise). Values: at most MAX_VALUE characters, no NUL (line breaks are
    fine)."""
    if len(additions) > MAX_VARIABLES:
        raise invalid(f"env has {len(additions)} variables; the limit is {MAX_VARIABLES}.")
    allowed = tuple(allowed)
    for name, value in additions.items():
        if not _NAME.match(name):
            raise invalid(f"{name[:64]!r} is not a variable name (letters, digits and `_`, not starting with a digit).")
        if (why := reserved_reason(name, set_inside=set_inside)) is not None:
            raise denied(f"environment variable {name} cannot be set by a caller: {why}.")
        if not confined and name not in allowed:
            never = " (with the sandbox off it can never be set: it changes what loads)" * bool(NEVER_SET.match(name))
            raise denied(
                f"environment variable {name[:64]!r} is not one a caller may set with the sandbox off{never}; "
                f"allowed: {', '.join(allowed) or '(none)'}. The operator lists more in `process_environment` "
                "([sections.shell_ops], config.example.toml; environment: MCP_SECTIONS_SHELL_OPS_PROCESS_ENVIRONMENT)."
            )
        if "\x00" in value or len(value) > MAX_VALUE:
            raise invalid(f"the value of {name} must be at most {MAX_VALUE} characters, without NUL.")
    return dict(additions)
