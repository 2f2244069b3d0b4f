"""Which environment variables a caller may add to a long-running process (start_process's `env`).

Every program gets a fixed environment (processes.child_environment); a dev server or a test run often needs a
little more (`PORT`, `NODE_ENV`, `DEBUG`). The names come from an allow-list the operator sets
(`process_environment`); the values are the caller's. Names that change how programs are found, loaded or
configured — and so would undo the fixed environment or an argument policy — are refused whatever the list says.
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
#: Never added by a caller: they decide which programs, libraries, modules or configuration load.
NEVER_SET = re.compile(
    r"^(?:PATH|HOME|TMPDIR|SHELL|ENV|BASH_ENV|IFS|CDPATH|VIRTUAL_ENV|LD_\w*|DYLD_\w*|PYTHONPATH|PYTHONHOME|"
    r"PYTHONSTARTUP|PYTHONUSERBASE|PYTHONEXECUTABLE|PYTHONNOUSERSITE|PYTHONSAFEPATH|PYTEST_\w*|NODE_OPTIONS|"
    r"NODE_PATH|NODE_EXTRA_CA_CERTS|GIT_\w*|NPM_\w*|UV_\w*|PIP_\w*|CARGO_\w*|RUSTC\w*|RUSTFLAGS|GO(?:FLAGS|PATH|ROOT|ENV|TOOLCHAIN|PROXY|CACHE|MODCACHE|BIN|INSECURE|NOSUMDB|PRIVATE)|CGO_\w*|"
    r"PERL5\w*|RUBY\w*|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|LESSOPEN|PAGER|EDITOR|VISUAL|MAKEFLAGS|MFLAGS|CC|CXX|"
    r"LANG|LC_\w*|TERM|CI|NO_COLOR)$",
    re.IGNORECASE,
)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
MAX_VALUE = 4096


def check_environment_names(names: Iterable[str]) -> list[str]:
    """A configured list of names: valid, none of NEVER_SET (ValueError)."""
    result: list[str] = []
    for raw in names:
        name = raw.strip()
        if not _NAME.match(name):
            raise ValueError(f"environment variable name {name[:64]!r} is not valid")
        if NEVER_SET.match(name):
            raise ValueError(f"environment variable {name!r} can never be set by a caller (it changes what loads)")
        if name not in result:
            result.append(name)
    return result


def checked_environment(additions: Mapping[str, str], allowed: Iterable[str]) -> dict[str, str]:
    """The caller's additions, if every name is allowed (PERMISSION_DENIED names the setting otherwise)."""
    allowed = tuple(allowed)
    for name, value in additions.items():
        if name not in allowed:
            never = " (it can never be set: it changes what loads)" if NEVER_SET.match(name) else ""
            raise denied(
                f"environment variable {name[:64]!r} is not one a caller may set{never}; allowed: "
                f"{', '.join(allowed) or '(none)'}. The operator lists more in `process_environment` "
                "([sections.shell_ops], config.example.toml; environment: MCP_SECTIONS_SHELL_OPS_PROCESS_ENVIRONMENT)."
            )
        if "\x00" in value or len(value) > MAX_VALUE:
            raise invalid(f"the value of {name} must be at most {MAX_VALUE} characters, without NUL.")
    return dict(additions)
