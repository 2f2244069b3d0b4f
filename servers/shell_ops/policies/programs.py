"""The argument policy of each allow-listed program (git and npm have modules of their own), and `policy_for`."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from mcp_sections.servers.shell_ops.policies.git import (
    GIT_REFUSED_FLAGS,
    GIT_REFUSED_SUBCOMMANDS,
    policy_git,
    policy_git_confined,
)
from mcp_sections.servers.shell_ops.policies.npm import NPM_REFUSED, NPM_SUBCOMMANDS, policy_npm, policy_npm_confined
from mcp_sections.servers.shell_ops.policies.policy import Policy, PolicyContext, PolicyInfo
from mcp_sections.servers.shell_ops.policies.project_tools import (
    PIP_SUBCOMMANDS,
    UV_PIP_READING,
    UV_SUBCOMMANDS,
    confined_only,
    policy_js_manager_confined,
    policy_mypy,
    policy_npx,
    policy_pip,
    policy_uv,
)
from mcp_sections.servers.shell_ops.policies.syntax import denied, find_flag, invalid, short_cluster, words
from mcp_sections.shared.confinement.guards.urls import is_loopback_host
from mcp_sections.shared.ground.errors import ToolFailure
from mcp_sections.shared.text.walking import WalkStats, walk


def _policy_find(args: list[str], ctx: PolicyContext) -> list[str]:
    refused = {
        "-exec": "runs a program",
        "-execdir": "runs a program",
        "-ok": "runs a program",
        "-okdir": "runs a program",
        "-delete": "deletes files",
        "-fprint": "writes a file",
        "-fprint0": "writes a file",
        "-fprintf": "writes a file",
        "-fls": "writes a file",
    }
    for arg in args:
        if arg in refused:
            raise denied(f"find {arg} is refused by the command policy ({refused[arg]}); use find only to list.")
    return args


def _policy_rg(args: list[str], ctx: PolicyContext) -> list[str]:
    if hit := find_flag(args, ("--pre", "--pre-glob", "--search-zip"), "z"):
        raise denied(f"rg {hit} is refused by the command policy (it runs a program on each file).")
    return args


def _policy_diff(args: list[str], ctx: PolicyContext) -> list[str]:
    return ["--no-dereference", *args]  # recursive diffs never read through symbolic links


def _policy_sort(args: list[str], ctx: PolicyContext) -> list[str]:
    if hit := find_flag(args, ("--output", "--compress-program", "--temporary-directory"), "oT"):
        raise denied(f"sort {hit} is refused by the command policy (it writes files or runs a program).")
    return args


def _policy_tar(args: list[str], ctx: PolicyContext) -> list[str]:
    long_flags = (
        "--to-command",
        "--use-compress-program",
        "--checkpoint-action",
        "--info-script",
        "--new-volume-script",
        "--rsh-command",
        "--rmt-command",
        "--absolute-names",
    )
    if hit := find_flag(args, long_flags, "IFP"):
        raise denied(f"tar {hit} is refused by the command policy (it runs a program or escapes the roots).")
    return args


def _policy_make(args: list[str], ctx: PolicyContext) -> list[str]:
    for arg in args:
        if not arg.startswith("-") and "=" in arg:
            raise denied(
                f"make variable override {arg.split('=', 1)[0]}=... is refused by the command policy "
                "(overrides such as SHELL= or CC= inject commands); put variables in the Makefile."
            )
    if hit := find_flag(args, ("--eval",), "E"):
        raise denied(f"make {hit} is refused by the command policy (it evaluates makefile text given inline).")
    return args


def _policy_pytest(args: list[str], ctx: PolicyContext) -> list[str]:
    if hit := find_flag(args, ("--override-ini", "--pdb", "--pdbcls", "--trace"), "o"):
        raise denied(
            f"pytest {hit} is refused by the command policy (ini overrides can move caches/output outside the "
            "roots; debuggers are interactive)."
        )
    for index, arg in enumerate(args):
        value = None
        if arg == "-p" and index + 1 < len(args):
            value = args[index + 1]
        elif arg.startswith("-p") and not arg.startswith("--"):
            value = arg[2:]
        if value is not None and not value.startswith("no:"):
            raise denied(
                "pytest -p PLUGIN is refused by the command policy except `-p no:NAME` (it imports a module); "
                "configure plugins in the project's pytest config."
            )
    return args


#: `python -m MODULE`: which modules run (any importable one) and what each must not do.
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
#: Modules refused under `python -m`, and why (their arguments are code, like -c's).
REFUSED_MODULES = {
    "timeit": "its arguments are statements it runs, like -c; time a function from a script instead",
}


def check_module(module: str, following: list[str], ctx: PolicyContext) -> None:
    """`python -m MODULE ARGS`: any importable module (the project's, the venv's, the standard library's) runs,
    inside the sandbox like a script, except those whose arguments are code; modules that are programs of their own
    (pip, pytest, mypy, uv, ruff) get those programs' policies; servers listen on loopback only."""
    if not _MODULE.match(module):
        raise invalid(f"python -m {module[:60] or '(missing)'}: not a module name; give e.g. `-m pytest`.")
    if module in REFUSED_MODULES:
        raise denied(f"python -m {module} is refused by the command policy: {REFUSED_MODULES[module]}.")
    if module == "pdb" and any(arg in ("-c", "--command") or arg.startswith("--command=") for arg in following):
        raise denied("python -m pdb -c is refused by the command policy (debugger commands run code, like -c).")
    if module == "http.server":
        _loopback_only(module, following, ("-b", "--bind"), required=True)
    elif module == "pydoc" and "-p" in following:
        _loopback_only(module, following, ("-n",), required=False)
    program = {"pip": "pip", "pytest": "pytest", "mypy": "mypy", "uv": "uv", "ruff": "ruff"}.get(module)
    if program is not None:
        check = POLICIES[program].check
        assert check is not None
        check(list(following), ctx)


def _loopback_only(module: str, args: Sequence[str], options: Sequence[str], *, required: bool) -> None:
    value = None
    for index, arg in enumerate(args):
        name, _, attached = arg.partition("=")
        if name in options:
            value = attached or (args[index + 1] if index + 1 < len(args) else "")
    if value is None and not required:
        return
    if value is None or not is_loopback_host(value):
        shown = "all interfaces" if value is None else repr(value[:60])
        raise denied(
            f"python -m {module} listening on {shown} is refused by the command policy: a server the agent starts "
            f"listens on loopback only; add `{options[0]} 127.0.0.1`."
        )


_PYTHON_SIMPLE = set("BbdEhiIOPqsSuvVx")
_PYTHON_LONG_OK = ("--version", "--help")


def _policy_python(args: list[str], ctx: PolicyContext) -> list[str]:
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            index += 1
            break
        if arg == "-":
            raise denied("python3 - (a program read from standard input) is refused by the command policy.")
        if arg.startswith("--"):
            if arg not in _PYTHON_LONG_OK:
                raise denied(f"python3 {arg} is refused by the command policy (only --version/--help are allowed).")
            index += 1
            continue
        if not arg.startswith("-"):
            break
        taken = _python_cluster(args, index, ctx)
        if taken is None:
            return args
        index += taken
    if index < len(args):
        script = args[index]
        if script == "-":
            raise denied("python3 - (a program read from standard input) is refused by the command policy.")
        ctx.confine(script)
    return args


def _python_cluster(args: list[str], index: int, ctx: PolicyContext) -> int | None:
    """The short options clustered in `args[index]`: how many arguments they take (2 when -W or -X takes the next
    one as its value), or None after `-m`, whose module's policy checked the rest."""
    cluster = args[index][1:]
    for position, letter in enumerate(cluster):
        if letter in _PYTHON_SIMPLE:
            continue
        rest = cluster[position + 1 :]
        if letter in "WX":
            return 1 if rest else 2  # without an attached value, the value is the next argument
        if letter == "m":
            module = rest or (args[index + 1] if index + 1 < len(args) else "")
            check_module(module, list(args[index + (1 if rest else 2) :]), ctx)
            return None
        if letter == "c":
            raise denied(
                "python3 -c (inline code) is refused by the command policy; write the code to a file inside "
                "the roots and run it by path."
            )
        raise denied(f"python3 -{letter} is refused by the command policy (unknown or unsupported option).")
    return 1


_NODE_FLAGS_OK = words(
    "--version -v --help -h --check -c --test --no-warnings --trace-warnings --trace-uncaught "
    "--enable-source-maps --pending-deprecation --no-deprecation --throw-deprecation "
    "--experimental-vm-modules"
)
_NODE_VALUE_FLAGS_OK = ("--stack-trace-limit", "--max-old-space-size", "--test-reporter", "--test-name-pattern")


def _policy_node(args: list[str], ctx: PolicyContext) -> list[str]:
    for index, arg in enumerate(args):
        if arg == "--":
            rest = args[index + 1 :]
            if rest:
                ctx.confine(rest[0])
            return args
        if arg == "-":
            raise denied("node - (a program read from standard input) is refused by the command policy.")
        if not arg.startswith("-"):
            ctx.confine(arg)
            return args  # the script; what follows are the script's own arguments
        name = arg.split("=", 1)[0]
        if arg in _NODE_FLAGS_OK or ("=" in arg and name in _NODE_VALUE_FLAGS_OK):
            continue
        raise denied(
            f"node {name} is refused by the command policy (inline code such as -e/--eval/-p, preloading "
            "with -r/--import/--loader, debuggers and environment files are not allowed); run a script file "
            "inside the roots."
        )
    return args


def _interpreter_policy(program: str, allowed: str) -> Policy:
    def check(args: list[str], ctx: PolicyContext) -> list[str]:
        for arg in args:
            if arg == "--":
                break
            if not arg.startswith("-"):
                ctx.confine(arg)
                break
            cluster = short_cluster(arg)
            if arg in ("--version", "--help") or (cluster and all(letter in allowed for letter in cluster)):
                continue
            raise denied(
                f"{program} {arg} is refused by the command policy (inline code, module loading, in-place "
                "editing and debuggers are not allowed); run a script file inside the roots."
            )
        return args

    return check


#: The module directives and builtins as keywords (not `.include`, `$import` or the string "include").
_JQ_MODULE_WORDS = re.compile(r"(?<![.$\w\"])(?:import|include|modulemeta|get_search_list)\b")
_JQ_TWO_VALUES = ("--arg", "--argjson", "--slurpfile", "--rawfile")
_JQ_ONE_VALUE = ("--indent", "--library-path", "-L")
_JQ_MAX_PROGRAM_FILE = 1024 * 1024


def _policy_jq(args: list[str], ctx: PolicyContext) -> list[str]:
    """jq without modules: `import "x" as $x {search: "/anywhere"}` reads `/anywhere/x.json` and `include`
    quotes lines of any `.jq` file in its syntax error, whatever the path confinement of the arguments says.

    The program is the first positional argument, or with `-f` a file (jq 1.6 takes the first positional as the
    file, 1.7 the argument after `-f`): with `-f`, every file argument is scanned, inputs included."""
    positional: list[str] = []
    from_file = False
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in ("--args", "--jsonargs"):
            break  # the rest are positional values for $ARGS, never read as files or programs
        if arg in _JQ_TWO_VALUES:
            index += 3
            continue
        if arg in _JQ_ONE_VALUE:
            index += 2
            continue
        if arg == "--from-file" or (short_cluster(arg) and "f" in arg[1:]):
            from_file = True
        elif not arg.startswith("-"):
            positional.append(arg)
        index += 1
    programs = positional[:1]
    if from_file:
        programs = [_jq_program_file(arg, ctx) for arg in positional]
    for program in programs:
        if match := _JQ_MODULE_WORDS.search(program):
            raise denied(
                f"jq {match.group(0)} is refused by the command policy (jq modules are read from any directory, "
                "outside the roots too); write the filter inline or in a file without imports."
            )
    return args


def _jq_program_file(arg: str, ctx: PolicyContext) -> str:
    path = ctx.confine(arg)
    try:
        with open(path, "rb") as handle:
            return handle.read(_JQ_MAX_PROGRAM_FILE).decode("utf-8", errors="replace")
    except OSError:
        return ""  # missing or not a file: jq reports it itself


RUFF_SUBCOMMANDS = ("check", "format", "rule", "config", "linter", "version", "help", "clean")
_RUFF_CONFIG_NAMES = ("ruff.toml", ".ruff.toml", "pyproject.toml")
_RUFF_SCAN_LIMIT = 100_000  # entries walked to find config files: a large project, not a home directory


def _policy_ruff(args: list[str], ctx: PolicyContext) -> list[str]:
    """ruff with its cache off and every configuration it may load (`extend` chains) inside the roots.

    A project's ruff config is the agent's to write: `cache-dir` would make ruff create directories and
    files anywhere, and `extend = "/etc/passwd"` makes ruff quote the lines of that file in its parse error.
    """
    if hit := find_flag(args, ("--cache-dir",)):
        raise denied(f"ruff {hit} is refused by the command policy (the cache is off; it would write outside).")
    positional = [arg for arg in args if not arg.startswith("-")]
    sub = positional[0] if positional else None
    if sub is None:
        if args and all(arg in ("--version", "-V", "--help", "-h") for arg in args):
            return args
        raise invalid(f'ruff needs a subcommand ({", ".join(RUFF_SUBCOMMANDS)}), e.g. ["ruff", "check", "."].')
    if sub not in RUFF_SUBCOMMANDS:
        raise denied(f"ruff {sub[:40]} is refused by the command policy; allowed: {', '.join(RUFF_SUBCOMMANDS)}.")
    if sub not in ("check", "format"):
        return args
    for config in _ruff_configs(args[args.index(sub) + 1 :], ctx):
        _confine_ruff_extends(config, ctx)
    position = args.index(sub) + 1
    return [*args[:position], "--no-cache", *args[position:]]


def _ruff_configs(rest: Sequence[str], ctx: PolicyContext) -> list[Path]:
    """Config files ruff may read: `--config FILE`, those in the ancestors (inside the roots) of cwd and of each
    path argument, and those below them."""
    found, starts = _ruff_named(rest, ctx)
    for start in starts:
        found += _ruff_ancestor_configs(start, ctx)
    for start in starts:  # the one walker: links never followed; installed trees left out
        stats = WalkStats()
        entries = walk(os.fspath(start), skip=_not_ruff_territory, max_entries=_RUFF_SCAN_LIMIT, stats=stats)
        found += [Path(entry.path) for entry in entries if not entry.is_dir and entry.name in _RUFF_CONFIG_NAMES]
        if stats.truncated:
            raise denied(
                "ruff: the directory tree is too large to check its configuration files; run it on a subfolder."
            )
    return list(dict.fromkeys(found))


def _not_ruff_territory(name: str, rel: str, is_dir: bool) -> bool:
    return is_dir and name in (".git", "node_modules", ".venv", "__pycache__")


def _ruff_named(rest: Sequence[str], ctx: PolicyContext) -> tuple[list[Path], list[Path]]:
    """The config files `--config` names, and where ruff starts looking for others: cwd and each path argument's
    directory (each confined to the roots)."""
    found: list[Path] = []
    starts = [ctx.cwd]
    for index, arg in enumerate(rest):
        value = arg.split("=", 1)[1] if arg.startswith("--config=") else None
        if arg == "--config" and index + 1 < len(rest):
            value = rest[index + 1]
        if value is not None and "=" not in value:
            found.append(ctx.confine(value))
        elif not arg.startswith("-") and (index == 0 or rest[index - 1] != "--config"):
            path = ctx.confine(arg)
            if path.exists():
                starts.append(path if path.is_dir() else path.parent)
    return found, list(dict.fromkeys(starts))


def _ruff_ancestor_configs(start: Path, ctx: PolicyContext) -> list[Path]:
    """The config files in `start` and its ancestors inside the roots."""
    found: list[Path] = []
    folder = start
    while True:
        found += [folder / name for name in _RUFF_CONFIG_NAMES if (folder / name).is_file()]
        parent = folder.parent
        if parent == folder or not _inside(parent, ctx):
            return found
        folder = parent


def _inside(path: Path, ctx: PolicyContext) -> bool:
    try:
        ctx.confine(str(path))
    except ToolFailure:
        return False
    return True


def _confine_ruff_extends(config: Path, ctx: PolicyContext, depth: int = 0) -> None:
    import tomllib

    if depth > 10:
        raise denied("ruff: the configuration `extend` chain is too long.")
    checked = ctx.confine(str(config))
    try:
        data = tomllib.loads(checked.read_text(encoding="utf-8", errors="replace"))
    except (OSError, tomllib.TOMLDecodeError):
        return  # ruff reports the project's own broken file; it quotes only that file
    table = data.get("tool", {}).get("ruff", {}) if checked.name == "pyproject.toml" else data
    extend = table.get("extend") if isinstance(table, dict) else None
    if extend is None:
        return
    if not isinstance(extend, str):
        return
    target = os.path.join(checked.parent, os.path.expanduser(extend))
    try:
        nested = ctx.confine(target)
    except ToolFailure:
        raise denied(
            f"ruff: {config.name} extends {extend[:120]!r}, which is outside the allowed roots or a protected file; "
            "ruff is not run on this configuration."
        ) from None
    if nested.is_file():
        _confine_ruff_extends(nested, ctx, depth + 1)


def _policy_generic(args: list[str], ctx: PolicyContext) -> list[str]:
    return args


POLICIES: dict[str, PolicyInfo] = {
    "git": PolicyInfo(
        "git",
        "local subcommands only (no network, no aliases); `-c`/--config-env and other global options refused; "
        "`--no-ext-diff --no-textconv` injected for diff/log/show; run with hardening config (fsmonitor, hooks, "
        "pager, editor, ssh, gpg, diff/filter/merge drivers of the repository config neutralised); the "
        "repository itself must be inside the roots; `git config` is read-only",
        (
            "-c",
            "--config-env",
            "--exec-path",
            *GIT_REFUSED_FLAGS,
            "grep -O",
            "rebase -x/-i",
            "clone/fetch -u",
            *(f"git {name}" for name in GIT_REFUSED_SUBCOMMANDS),
        ),
        policy_git,
        "`-C`, `--git-dir`, `--work-tree` confined to the roots: the hardened repository probes run outside the "
        "sandbox, in that repository (one outside the roots, or borrowing objects or config from outside, is refused); "
        "`-c` and `--exec-path` reach the sandboxed git only, never the probes; secret files are not named as "
        "pathspecs or blobs (`HEAD:.env`): the sandbox hides the file, not its copies in git's objects",
        policy_git_confined,
    ),
    "find": PolicyInfo(
        "find",
        "listing only",
        ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"),
        _policy_find,
    ),
    "rg": PolicyInfo(
        "rg",
        "no preprocessors",
        ("--pre", "--pre-glob", "-z/--search-zip"),
        _policy_rg,
    ),
    "diff": PolicyInfo("diff", "`--no-dereference` always added", (), _policy_diff),
    "sort": PolicyInfo(
        "sort", "output to stdout only", ("-o/--output", "--compress-program", "-T/--temporary-directory"), _policy_sort
    ),
    "tar": PolicyInfo(
        "tar",
        "no programs run by tar (not on the default allow-list)",
        ("--to-command", "--use-compress-program/-I", "--checkpoint-action", "--info-script/-F", "--rsh-command"),
        _policy_tar,
    ),
    "make": PolicyInfo("make", "runs the project's own Makefile", ("VAR=value overrides", "-E/--eval"), _policy_make),
    "pytest": PolicyInfo(
        "pytest",
        "runs the project's tests",
        ("-o/--override-ini", "-p PLUGIN (except -p no:NAME)", "--pdb", "--pdbcls", "--trace"),
        _policy_pytest,
    ),
    "python": PolicyInfo(
        "python",
        f"options before the script limited to -{''.join(sorted(_PYTHON_SIMPLE))} -W -X; the script must be "
        "inside the roots; -m runs any module (pip, pytest, mypy, uv and ruff with their own policies; "
        "http.server and pydoc -p on loopback only)",
        ("-c", *(f"-m {module}" for module in REFUSED_MODULES), "-m pdb -c", "- (stdin)", "other long options"),
        _policy_python,
        "nothing (`-c`, `-m timeit`, a server on any address run confined); `-m pip install` gets the registry-only "
        "egress",
    ),
    "node": PolicyInfo(
        "node",
        "options before the script limited to " + ", ".join((*_NODE_FLAGS_OK, *_NODE_VALUE_FLAGS_OK)),
        ("-e/--eval", "-p/--print", "-r/--require", "--import", "--loader", "-i", "--inspect*", "--env-file", "-"),
        _policy_node,
    ),
    "perl": PolicyInfo(
        "perl",
        "options before the script limited to -w -W -X -c -T -t -v (not on the default allow-list)",
        ("-e", "-E", "-M/-m", "-n/-p", "-i", "-d", "-x", "-I"),
        _interpreter_policy("perl", "wWXcTtv"),
    ),
    "ruby": PolicyInfo(
        "ruby",
        "options before the script limited to -w -W -c -v (not on the default allow-list)",
        ("-e", "-r", "-n/-p", "-i", "-x", "-I", "-C"),
        _interpreter_policy("ruby", "wWcv"),
    ),
    "npm": PolicyInfo(
        "npm",
        "subcommands " + ", ".join(NPM_SUBCOMMANDS) + "; `--ignore-scripts --script-shell=/bin/sh` always added "
        "(pre/post hooks never run); lifecycle script names refused",
        ("install/ci/exec/publish/config/...", *NPM_REFUSED),
        policy_npm,
        "no `exec`/`x`/`explore`, `--script-shell`, `--call`: they run a program the caller names (the allow-list is "
        "the operator's); `install`/`ci`/`update` get the registry-only egress",
        policy_npm_confined,
    ),
    "ruff": PolicyInfo(
        "ruff",
        "check/format run with `--no-cache`; every config file ruff may load (and its `extend` chain) must lie "
        "inside the roots",
        ("--cache-dir", "`extend` outside the roots", "server/analyze"),
        _policy_ruff,
    ),
    "jq": PolicyInfo(
        "jq",
        "filters only: no modules (`import`, `include`, `modulemeta`, in the program or a -f file)",
        ("import", "include", "modulemeta", "get_search_list"),
        _policy_jq,
    ),
    "pip": PolicyInfo(
        "pip",
        f"reads the environment only: {', '.join(PIP_SUBCOMMANDS)}",
        ("install", "download", "uninstall", "wheel", "config", "cache", "index"),
        policy_pip,
        "nothing; `install`, `download`, `wheel` get the registry-only egress (`-e .`, `-r requirements.txt`, local "
        "paths: what the sandbox shows)",
    ),
    "mypy": PolicyInfo("mypy", "type checks; writes its cache inside the roots", ("--install-types",), policy_mypy),
    "uv": PolicyInfo(
        "uv",
        f"subcommands {', '.join(UV_SUBCOMMANDS)}; `uv run CMD` checks CMD as a command of its own; `uv pip` only "
        f"{', '.join(UV_PIP_READING)}",
        ("sync", "lock", "add", "remove", "tool", "python install", "pip install", "run --with", "run --env-file"),
        policy_uv,
        "`uv run CMD` checks CMD as a command of its own (a wrapper: the allow-list); `sync`, `lock`, `add`, `remove`, "
        "`venv`, `pip install` get the registry-only egress",
        _policy_generic,
    ),
    "npx": PolicyInfo(
        "npx",
        "runs a tool of the project's node_modules/.bin (never downloads: `--no` is always added)",
        ("-c/--call", "-p/--package", "tools not installed in node_modules/.bin"),
        policy_npx,
        "a tool of node_modules/.bin only, with `--no`; no `-c`/`--call` nor `-p`: npx runs the program it names (a "
        "wrapper: the allow-list)",
        policy_npx,
    ),
    "poetry": PolicyInfo(
        "poetry",
        "with the sandbox off only `--version`: its installs need the registry-only egress (not on the default "
        "allow-list)",
        ("everything but --version",),
        confined_only("poetry", "its installs need the registry-only egress; `poetry run` runs any command"),
        "`poetry run CMD` checks CMD as a command of its own (the allow-list); `install`, `lock`, `add`, `update` get "
        "the registry-only egress",
        _policy_generic,
    ),
    **{
        manager: PolicyInfo(
            manager,
            "with the sandbox off only `--version`: its installs need the registry-only egress (not on the default "
            "allow-list)",
            ("everything but --version",),
            confined_only(manager, "its installs need the registry-only egress; its scripts run any command"),
            "no `exec`/`dlx`/`create`: they run a program the caller names (the allow-list); `install`, `add`, "
            "`update` get the registry-only egress",
            policy_js_manager_confined,
        )
        for manager in ("pnpm", "yarn")
    },
    "generic": PolicyInfo("generic", "no option runs code; path arguments confined to the roots", (), _policy_generic),
}


def policy_for(program: str) -> PolicyInfo:
    """The argument policy of a program name (interpreters by family: python3.12 → python)."""
    if program in POLICIES:
        return POLICIES[program]
    if re.fullmatch(r"python[0-9.]*", program):
        return POLICIES["python"]
    if program in ("nodejs",):
        return POLICIES["node"]
    if re.fullmatch(r"pip[0-9.]*", program):
        return POLICIES["pip"]
    if re.fullmatch(r"perl[0-9.]*", program):
        return POLICIES["perl"]
    if re.fullmatch(r"ruby[0-9.]*", program):
        return POLICIES["ruby"]
    return POLICIES["generic"]
