"""Policies of the programs a project environment brings: pip, uv, poetry, pnpm, yarn, npx, mypy, and `python -m`.

These programs run the project's own code inside the OS sandbox, like `python3 script.py`. Inside it their installs
run through the registry-only egress (`shared.confinement.installers`) and only the allow-list remains: `uv run CMD` and
`poetry run CMD` are wrappers whose CMD is returned to the guard, which checks it as a command of its own (`uv run bash`
is refused exactly as `bash` is), and `npx`, `pnpm`/`yarn exec`/`dlx` run only what the allow-list allows. With the
sandbox off (the `policy_*` functions) the full rules apply: nothing installs (file_ops' `install_package` does), no
inline code (`-c`, `timeit`'s statements, `npx -c`), no server listening beyond the loopback interface (`-m
http.server` with `--bind 127.0.0.1`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mcp_sections.servers.shell_ops.policies.allow_list import NEVER_ALLOWED
from mcp_sections.servers.shell_ops.policies.policy import Policy, PolicyContext
from mcp_sections.servers.shell_ops.policies.syntax import denied, invalid, words

INSTALL_HINT = (
    "installing packages goes through file_ops' install_package here (it installs into the project's venv or "
    "node_modules); inside the OS sandbox an installer run_command starts reaches the registries itself"
)
INSTALL_SENTENCE = "I" + INSTALL_HINT[1:] + "."

PIP_SUBCOMMANDS = ("list", "show", "freeze", "check", "inspect", "hash", "help", "debug")
_PIP_GLOBAL_OK = words("-q --quiet -v --verbose --isolated --no-color --disable-pip-version-check --no-input")


def policy_pip(args: list[str], ctx: PolicyContext) -> list[str]:
    """pip reads the environment: list, show, freeze, check, inspect, hash, help, debug."""
    for index, arg in enumerate(args):
        if arg in ("--version", "-V", "--help", "-h") and index == len(args) - 1:
            return args
        if arg.startswith("-"):
            if arg not in _PIP_GLOBAL_OK:
                raise denied(
                    f"pip {arg.split('=', 1)[0]} is refused by the command policy before the subcommand; allowed: "
                    f"{', '.join(_PIP_GLOBAL_OK)}."
                )
            continue
        if arg not in PIP_SUBCOMMANDS:
            raise denied(
                f"pip {arg[:40]} is refused by the command policy: pip here only reads the environment "
                f"({', '.join(PIP_SUBCOMMANDS)}); {INSTALL_HINT}."
            )
        return args
    raise invalid(f'pip needs a subcommand ({", ".join(PIP_SUBCOMMANDS)}), e.g. ["pip", "list"].')


def policy_mypy(args: list[str], ctx: PolicyContext) -> list[str]:
    for arg in args:
        if arg == "--":
            break
        if arg.split("=", 1)[0] == "--install-types":
            raise denied(f"mypy --install-types is refused by the command policy (it installs); {INSTALL_HINT}.")
    return args


_NPX_OPTIONS_OK = words("--no --no-install --offline -q --quiet --silent")


def policy_npx(args: list[str], ctx: PolicyContext) -> list[str]:
    """npx runs a tool of the project's node_modules/.bin, never one it would fetch from the registry."""
    for arg in args:
        if arg.startswith("-"):
            if arg in _NPX_OPTIONS_OK:
                continue
            raise denied(
                f"npx {arg.split('=', 1)[0]} is refused by the command policy (-c/--call runs shell text, "
                f"-p/--package installs); allowed options: {', '.join(_NPX_OPTIONS_OK)}. Run a tool of the "
                "project's node_modules/.bin by name."
            )
        tool = arg
        if tool in NEVER_ALLOWED or "/" in tool or tool.startswith("."):
            raise denied(f"npx {tool[:60]} is refused by the command policy: npx runs only the project's own tools.")
        installed = ctx.node_bin is not None and (ctx.node_bin / tool).is_file()
        if not installed:
            where = f" ({ctx.node_bin})" if ctx.node_bin is not None else ""
            raise denied(
                f"npx {tool[:60]}: no such tool in the project's node_modules/.bin{where}; npx here never downloads "
                f"a package. {INSTALL_SENTENCE}"
            )
        return ["--no", *args]
    raise invalid('npx needs the name of a tool from node_modules/.bin, e.g. ["npx", "eslint", "."].')


UV_SUBCOMMANDS = ("run", "pip", "venv", "tree", "version", "help")
_UV_GLOBAL_OK = words("-q --quiet -v --verbose --offline --no-progress --no-cache --native-tls --no-config")
_UV_RUN_FLAGS_OK = words(
    "--no-sync --frozen --locked --offline --no-project --active --isolated --no-dev --all-extras -q --quiet "
    "--no-progress --exact --inexact"
)
_UV_RUN_VALUES_OK = ("--python", "-p", "--directory", "--project", "--extra", "--group", "--only-group", "--package")
UV_PIP_READING = ("list", "show", "freeze", "check", "tree")


@dataclass(frozen=True)
class Wrapped:
    """A wrapper's checked arguments and the command it runs, for the guard to check as a command of its own."""

    args: list[str]
    inner: list[str] | None


def policy_uv(args: list[str], ctx: PolicyContext) -> list[str]:
    return split_uv(args).args


def split_uv(args: Sequence[str]) -> Wrapped:
    """uv's arguments checked; for `uv run`, the command it runs (`uv run -m mod` → `python -m mod`, `uv run x.py`
    → `python x.py`)."""
    args = list(args)
    index = _uv_global_options(args)
    if index is None:
        return Wrapped(args, None)
    if index == len(args):
        raise invalid(f'uv needs a subcommand ({", ".join(UV_SUBCOMMANDS)}), e.g. ["uv", "run", "pytest"].')
    sub = args[index]
    if sub not in UV_SUBCOMMANDS:
        raise denied(
            f"uv {sub[:40]} is refused by the command policy (it installs, downloads or changes the lock file; "
            f"there is no network inside the sandbox); allowed: {', '.join(UV_SUBCOMMANDS)}. {INSTALL_SENTENCE}"
        )
    rest = args[index + 1 :]
    if sub == "pip":
        reading = next((arg for arg in rest if not arg.startswith("-")), None)
        if reading not in UV_PIP_READING:
            raise denied(
                f"uv pip {str(reading)[:40]} is refused by the command policy: only {', '.join(UV_PIP_READING)}; "
                f"{INSTALL_HINT}."
            )
        return Wrapped(args, None)
    if sub != "run":
        return Wrapped(args, None)
    return Wrapped(args, _uv_run(rest))


def _uv_global_options(args: list[str]) -> int | None:
    """The index of uv's subcommand once the options before it are allowed ones; None for `uv --version` (or
    --help) alone."""
    index = 0
    while index < len(args) and args[index].startswith("-"):
        option = args[index]
        if option in ("--version", "-V", "--help", "-h") and index == len(args) - 1:
            return None
        if option.split("=", 1)[0] not in _UV_GLOBAL_OK:
            raise denied(
                f"uv {option.split('=', 1)[0]} is refused by the command policy before the subcommand; allowed: "
                f"{', '.join(_UV_GLOBAL_OK)}."
            )
        index += 1
    return index


def _uv_run(rest: list[str]) -> list[str]:
    """The command `uv run` runs, once its options are allowed ones."""
    position = 0
    while position < len(rest):
        option = rest[position]
        if option == "--":
            position += 1
            break
        if not option.startswith("-"):
            break
        name = option.split("=", 1)[0]
        if name in ("-m", "--module"):
            return _module_command(rest, position)
        if name in _UV_RUN_FLAGS_OK and "=" not in option:
            position += 1
        elif name in _UV_RUN_VALUES_OK:
            position += 1 if "=" in option else 2
        else:
            raise denied(
                f"uv run {name} is refused by the command policy (--with and similar options install packages; "
                f"--env-file reads a secrets file); allowed: {', '.join((*_UV_RUN_FLAGS_OK, *_UV_RUN_VALUES_OK))}."
            )
    return _run_command(rest[position:])


def _module_command(rest: list[str], index: int) -> list[str]:
    """`uv run -m MODULE ARGS` (or `--module=MODULE`) at `rest[index]` runs `python -m MODULE ARGS`."""
    option = rest[index]
    attached = "=" in option
    module = option.split("=", 1)[1] if attached else (rest[index + 1] if index + 1 < len(rest) else "")
    return ["python", "-m", module, *rest[index + (1 if attached else 2) :]]


def _run_command(inner: list[str]) -> list[str]:
    """What `uv run` runs: a command, or a script file run with the project's interpreter."""
    if not inner:
        raise invalid('uv run needs a command, e.g. ["uv", "run", "pytest", "-q"].')
    if inner[0].endswith(".py") and "/" not in inner[0]:
        return ["python", *inner]  # uv runs a script file with the project's interpreter
    return inner


#: uv options (global and `uv run`'s) that take a value, so that the command `uv run` runs is found after them; an
#: option not listed is taken for a flag.
_UV_VALUE_OPTIONS = frozenset(
    [
        *_UV_RUN_VALUES_OK,
        *words(
            "--with --with-editable --with-requirements --env-file --index --default-index --index-url "
            "--extra-index-url --find-links -f --cache-dir --config-file --color --index-strategy --keyring-provider "
            "--resolution --prerelease --exclude-newer --link-mode --config-setting -C --upgrade-package -P "
            "--reinstall-package --refresh-package --no-build-package --no-binary-package --allow-insecure-host "
            "--python-preference"
        ),
    ]
)


def split_uv_confined(args: Sequence[str]) -> Wrapped:
    """uv inside the sandbox: every subcommand runs confined (installs through the registry-only egress), and only the
    allow-list remains: `uv run CMD` returns CMD, checked by the guard as a command of its own."""
    args = list(args)
    position = _skip_options(args, 0)
    if position >= len(args) or args[position] != "run":
        return Wrapped(args, None)
    rest = args[position + 1 :]
    start = _skip_options(rest, 0, module=True)
    if start < 0:  # `uv run -m MODULE ...`
        return Wrapped(args, _module_command(rest, -start - 1))
    inner = rest[start:]
    if inner and inner[0] == "--":
        inner = inner[1:]
    return Wrapped(args, _run_command(inner))


def _skip_options(args: Sequence[str], index: int, *, module: bool = False) -> int:
    """The index of the first positional argument from `index` (options and their values skipped); with `module`, a
    `-m`/`--module` option at index i returns -(i + 1)."""
    while index < len(args) and args[index].startswith("-") and args[index] != "--":
        name = args[index].split("=", 1)[0]
        if module and name in ("-m", "--module"):
            return -(index + 1)
        index += 2 if name in _UV_VALUE_OPTIONS and "=" not in args[index] else 1
    return index


def split_poetry(args: Sequence[str]) -> Wrapped:
    """poetry: `poetry run CMD` returns CMD for the guard to check as a command of its own (the allow-list); the rest
    of poetry runs confined (`install`, `lock`, `add` through the registry-only egress)."""
    args = list(args)
    index = 0
    while index < len(args) and args[index].startswith("-"):
        index += 2 if args[index] in ("-C", "--directory", "-P", "--project") else 1
    if index >= len(args) or args[index] != "run":
        return Wrapped(args, None)
    inner = args[index + 1 :]
    if inner and inner[0] == "--":
        inner = inner[1:]
    if not inner:
        raise invalid('poetry run needs a command, e.g. ["poetry", "run", "pytest"].')
    return Wrapped(args, inner)


def confined_only(program: str, what: str) -> Policy:
    """The policy, with the sandbox off, of a program that has argument rules only for the sandbox: `--version` and
    `--help` (`what`: why it needs the sandbox)."""

    def check(args: list[str], ctx: PolicyContext) -> list[str]:
        if args and all(arg in ("--version", "-V", "-v", "--help", "-h") for arg in args):
            return args
        raise denied(
            f"{program} runs only inside the OS sandbox ({what}); with the sandbox off, only `{program} --version`. "
            f"{INSTALL_SENTENCE}"
        )

    return check


#: pnpm/yarn subcommands that run a program the caller names or fetch one and run it (wrappers).
JS_WRAPPERS = ("exec", "dlx", "x", "create")


def policy_js_manager_confined(args: list[str], ctx: PolicyContext) -> list[str]:
    """pnpm and yarn inside the sandbox: installs and scripts run confined; a wrapper subcommand (`exec`, `dlx`) would
    run a program the caller names, bypassing the allow-list."""
    positional = [arg for arg in args if not arg.startswith("-")]
    if positional and positional[0] in JS_WRAPPERS:
        raise denied(
            f"{ctx.program} {positional[0]} is refused: it runs a program the caller names, like a wrapper, which "
            "would bypass the allow-list of programs; run the program by name."
        )
    return args
