"""The command guard: turns a caller's command into a checked argv, or refuses it with an error code.

No shell is ever involved: a command is an argv list (or a string split with `shlex.split`), its program
must be on the allow-list and is resolved on a FIXED search path (never the caller's), and each program
has an argument policy that refuses the flags that would run code or write files outside the project.

Rules, in the order they are applied:

1. Syntax (INVALID_INPUT): no empty command, no NUL or newline in any argument, no shell syntax
   (`;`, `|`, `&&`, `>`, `$(`, backticks, ...) since nothing would interpret it, no leading
   `NAME=value` environment assignment (the child environment is fixed).
2. Program (PERMISSION_DENIED / NOT_FOUND): shells, wrappers that run another program (`env`, `xargs`,
   `sudo`, `timeout`, `nice`, ...) and script-evaluating text tools (`awk`, `sed`, ...) are never
   allowed, whatever the configuration says; otherwise the name must be on the allow-list and is
   resolved on the fixed search path to an absolute executable. An absolute program path is accepted
   only if it is exactly that resolved executable; relative program paths (`./x`) are refused.
   An allowed program that is not installed on the search path is NOT_FOUND.
3. Arguments (PERMISSION_DENIED): the program's policy (below; `policy_summaries()` describes them all),
   then path confinement: every argument that looks like a path (contains `/`, is `.`/`..`, or names an
   entry that exists in the working directory) and every `--opt=value` / `-Xvalue` value that does,
   must resolve (symlinks followed) inside the roots, and must not match the path guard's deny globs.

Long options are matched by unambiguous prefix too (`--outp=x` is `--output=x`, as getopt_long and
git's parse-options accept), and short-option clusters are scanned letter by letter (`-uo x` holds
`-o`); both err on the side of refusing.

What this guard does NOT do (documented limits): it cannot stop a project's own code from doing
anything (`make`, `npm test`, `pytest`, `python3 script.py` run files inside the roots, which the agent
may have written); deny globs apply to paths named in arguments, not to files a recursive tool
(`grep -r`, `find`, `git`) reaches by itself; it does not sandbox the network or the file system (use
a container for that). The guard is a policy layer against argument injection, not a jail.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcp_sections.shared.errors import ErrorCode, ToolFailure
from mcp_sections.shared.guards.paths import PathGuard


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


DEFAULT_SEARCH_PATH = "/usr/local/bin:/usr/bin:/bin"
MAX_ARGUMENTS = 256
MAX_ARGUMENT_LENGTH = 8192
MAX_COMMAND_LENGTH = 65536

#: The default allow-list, each entry with the reason it is there (shown by `list_safe_commands`).
DEFAULT_ALLOWED_PROGRAMS: dict[str, str] = {
    "ls": "lists directories; no option runs code or writes files",
    "cat": "prints files; read-only",
    "head": "prints the start of files; read-only",
    "tail": "prints the end of files; read-only (`-f` ends at the timeout)",
    "wc": "counts lines/words/bytes; read-only",
    "grep": "searches text; read-only (`-f FILE` is path-confined, -R refused: it follows symlinks)",
    "rg": "ripgrep; read-only once `--pre` (runs a program per file) is refused",
    "find": "finds files; read-only once -exec/-ok/-delete/-fprint* and symlink following are refused",
    "sort": "sorts text; read-only once -o/--output, --compress-program and -T are refused",
    "diff": "compares files; read-only (symbolic links are not followed)",
    "stat": "file metadata; read-only",
    "du": "disk usage; read-only",
    "jq": "JSON queries; its language cannot run programs or write files (modules, which read any path, are refused)",
    "git": "version control: local subcommands only, hardened so repository config runs nothing",
    "python3": "runs project scripts and allow-listed modules (pytest, unittest, ...); `-c` is refused",
    "python": "same policy as python3",
    "node": "runs project scripts; -e/--eval/-p/--require/--import/--inspect and other flags are refused",
    "npm": "only `npm run`/`npm test`/`npm ls`, with lifecycle scripts disabled and the script shell pinned",
    "pytest": "runs the project's tests; -o/--override-ini, -p (except `no:`), --pdb are refused",
    "ruff": "Python linter/formatter; writes only files inside the roots",
    "make": "runs the project's Makefile; variable overrides (`X=...`) and --eval are refused",
}

#: Never allowed, not even through configuration: they exist to run other programs or evaluate code.
NEVER_ALLOWED: dict[str, str] = {
    **dict.fromkeys(
        ("sh", "bash", "dash", "zsh", "ksh", "mksh", "csh", "tcsh", "fish", "ash", "rbash", "pwsh", "powershell"),
        "a shell: it interprets its arguments as code",
    ),
    **dict.fromkeys(("busybox", "toybox"), "a multi-call binary that includes a shell"),
    **dict.fromkeys(
        _words(
            "env xargs sudo su doas pkexec runuser nohup timeout nice ionice chrt taskset setsid stdbuf unbuffer "
            "script time command exec eval builtin watch flock chroot unshare nsenter systemd-run strace ltrace "
            "gdb parallel at batch crontab npx ssh rsync socat nc ncat"
        ),
        "a wrapper that runs another program (or a remote one): it would bypass the allow-list",
    ),
    **dict.fromkeys(
        ("awk", "gawk", "mawk", "nawk", "sed", "ed", "ex", "vi", "vim", "nvim", "emacs", "less", "more", "man", "dc"),
        "its scripts are code (system(), `e`, `w file`, `!cmd`), so arguments cannot be made safe",
    ),
    **dict.fromkeys(
        _words("php lua luajit Rscript tclsh wish osascript deno bun java jshell pip pip3"),
        "an interpreter or installer without an argument policy here",
    ),
}

SHELL_OPERATORS = frozenset(
    {";", ";;", "|", "||", "|&", "&", "&&", ">", ">>", "<", "<<", "<<<", ">|", "&>", "&>>", "2>", "2>>", "2>&1", ">&"}
    | {"1>", "1>>"}
)
_SHELL_SUBSTITUTION = re.compile(r"\$\(|\$\{|`|<\(|>\(")
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
#: `>file`, `2>/dev/null`, `>>log`, `2>&1` as one argv element: a redirection that no shell will perform.
_REDIRECTION = re.compile(r"^(?:[0-9]?>>?|&>>?)[^>]|^[0-9]?>&[0-9-]$")
_PUNCTUATION = ";&|<>"
_NO_SHELL_HINT = (
    "no shell is used to run commands, so shell syntax is not interpreted; pass the program and its "
    'arguments as an argv list (e.g. ["grep", "-n", "TODO", "src"]) and make one call per command.'
)


@dataclass(frozen=True)
class CheckedCommand:
    """A command that passed the guard: run `argv` (argv[0] absolute) in `cwd`, never through a shell."""

    program: str
    executable: str
    args: tuple[str, ...]
    cwd: Path
    policy: str

    @property
    def argv(self) -> list[str]:
        return [self.executable, *self.args]


def denied(message: str) -> ToolFailure:
    return ToolFailure(ErrorCode.PERMISSION_DENIED, message)


def invalid(message: str) -> ToolFailure:
    return ToolFailure(ErrorCode.INVALID_INPUT, message)


# -- step 1: syntax ------------------------------------------------------------------------------------


def split_command(command: str | Sequence[str]) -> list[str]:
    """The argv of a command given as a list or a string; INVALID_INPUT for anything that needs a shell."""
    if isinstance(command, str):
        if len(command) > MAX_COMMAND_LENGTH:
            raise invalid(f"the command is {len(command)} characters long; the limit is {MAX_COMMAND_LENGTH}.")
        _check_text(command, "the command")
        if _SHELL_SUBSTITUTION.search(command):
            raise invalid("the command contains `$(`, `${`, a backtick or a process substitution; " + _NO_SHELL_HINT)
        try:
            lexer = shlex.shlex(command, posix=True, punctuation_chars=_PUNCTUATION)
            lexer.whitespace_split = True
            tokens = list(lexer)
        except ValueError as exc:
            raise invalid(f"the command could not be split into arguments ({exc}); check its quoting.") from None
        # punctuation_chars splits unquoted operators into their own tokens; re-split without it for argv.
        if any(token and set(token) <= set(_PUNCTUATION) for token in tokens):
            raise invalid("the command contains shell operators (`;`, `|`, `&&`, `>`, ...); " + _NO_SHELL_HINT)
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise invalid(f"the command could not be split into arguments ({exc}); check its quoting.") from None
    else:
        argv = list(command)
        for index, arg in enumerate(argv):
            if not isinstance(arg, str):
                raise invalid(f"argument {index} is not a string; every argv element must be a string.")
            _check_text(arg, f"argument {index}")
        for arg in argv[1:]:
            if arg in SHELL_OPERATORS or _REDIRECTION.match(arg):
                raise invalid(f"argument {arg!r} is a shell operator; " + _NO_SHELL_HINT)
    if not argv or not argv[0].strip():
        raise invalid("the command is empty; give the program name and its arguments.")
    if len(argv) > MAX_ARGUMENTS:
        raise invalid(f"the command has {len(argv)} arguments; the limit is {MAX_ARGUMENTS}.")
    for arg in argv:
        if len(arg) > MAX_ARGUMENT_LENGTH:
            raise invalid(f"an argument is {len(arg)} characters long; the limit is {MAX_ARGUMENT_LENGTH}.")
    if _ENV_ASSIGNMENT.match(argv[0]):
        raise invalid(
            f"{argv[0].split('=', 1)[0]}=... is an environment assignment; commands run with a fixed environment "
            "that callers cannot change, and no shell interprets assignments. Give the program name first."
        )
    return argv


def _check_text(text: str, what: str) -> None:
    if "\x00" in text:
        raise invalid(f"{what} contains a NUL byte; arguments cannot hold one.")
    if "\n" in text or "\r" in text:
        raise invalid(f"{what} contains a line break; " + _NO_SHELL_HINT)


# -- option matching helpers ---------------------------------------------------------------------------


def long_name(arg: str) -> str | None:
    """`--name` of `--name` or `--name=value`; None for anything else (including `--`)."""
    if not arg.startswith("--") or arg == "--":
        return None
    return arg.split("=", 1)[0]


def matches_long(arg: str, flags: Iterable[str]) -> str | None:
    """The denied long flag `arg` spells, exactly or as an unambiguous-looking prefix (`--outp`)."""
    name = long_name(arg)
    if name is None or len(name) < 3:
        return None
    for flag in flags:
        if flag == name or (flag.startswith(name) and len(name) >= 4 and name not in _LEGIT_PREFIXES):
            return flag
    return None


#: Real options that are prefixes of refused ones (`git diff --text` is not `--textconv`, `git format-patch
#: --to` is not `--tool`, `npm ls --include` is not `--include-workspace-root`).
_LEGIT_PREFIXES = frozenset({"--text", "--to", "--include"})


def short_cluster(arg: str) -> str:
    """The letters of a short-option cluster (`-abc` → `abc`); '' for non-short arguments."""
    if len(arg) < 2 or arg[0] != "-" or arg[1] == "-":
        return ""
    return arg[1:]


def find_flag(args: Sequence[str], long_flags: Iterable[str] = (), short_flags: str = "") -> str | None:
    """The first argument that uses one of the flags (long by prefix, short anywhere in a cluster)."""
    long_flags = tuple(long_flags)
    for arg in args:
        if long_flags and (hit := matches_long(arg, long_flags)):
            return hit
        cluster = short_cluster(arg)
        if cluster and short_flags and any(letter in short_flags for letter in cluster):
            letter = next(letter for letter in cluster if letter in short_flags)
            return f"-{letter}"
    return None


# -- policies ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PolicyContext:
    """What a policy may use: the working directory and the path confinement check."""

    program: str
    cwd: Path
    confine: Callable[[str], Path]
    denied: Callable[[str], bool] = lambda relative: False
    """Whether a path relative to a repository or root matches the deny globs (`HEAD:.env` names one)."""


Policy = Callable[[list[str], PolicyContext], list[str]]


@dataclass(frozen=True)
class PolicyInfo:
    name: str
    summary: str
    refused: tuple[str, ...] = ()
    check: Policy | None = field(default=None, repr=False)


def _refuse_flags(program: str, long_flags: Sequence[str] = (), short_flags: str = "", why: str = "") -> Policy:
    def check(args: list[str], ctx: PolicyContext) -> list[str]:
        if hit := find_flag(args, long_flags, short_flags):
            raise denied(f"{program} {hit} is refused by the command policy ({why}).")
        return args

    return check


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
        "-L": "follows symbolic links, possibly out of the roots",
        "-follow": "follows symbolic links, possibly out of the roots",
    }
    for arg in args:
        if arg in refused:
            raise denied(f"find {arg} is refused by the command policy ({refused[arg]}); use find only to list.")
    return args


def _policy_rg(args: list[str], ctx: PolicyContext) -> list[str]:
    if hit := find_flag(args, ("--pre", "--pre-glob", "--search-zip"), "z"):
        raise denied(f"rg {hit} is refused by the command policy (it runs a program on each file).")
    if hit := find_flag(args, ("--follow",), "L"):
        raise denied(f"rg {hit} is refused by the command policy (it follows symbolic links out of the roots).")
    return args


def _policy_grep(args: list[str], ctx: PolicyContext) -> list[str]:
    if hit := find_flag(args, ("--dereference-recursive",), "R"):
        raise denied(
            f"grep {hit} is refused by the command policy (it follows symbolic links out of the roots); use -r."
        )
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


PYTHON_MODULES = ("pytest", "unittest", "doctest", "json.tool", "py_compile", "compileall")
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
        cluster = arg[1:]
        for position, letter in enumerate(cluster):
            if letter in _PYTHON_SIMPLE:
                continue
            rest = cluster[position + 1 :]
            if letter in "WX":
                if not rest:
                    index += 1  # the value is the next argument
                break
            if letter == "m":
                module = rest or (args[index + 1] if index + 1 < len(args) else "")
                if module not in PYTHON_MODULES:
                    raise denied(
                        f"python3 -m {module or '(missing)'} is refused by the command policy; allowed modules: "
                        f"{', '.join(PYTHON_MODULES)}. Run project scripts by path instead."
                    )
                following = args[index + (1 if rest else 2) :]
                if module == "pytest":
                    _policy_pytest(list(following), ctx)
                return args
            if letter == "c":
                raise denied(
                    "python3 -c (inline code) is refused by the command policy; write the code to a file inside "
                    "the roots and run it by path."
                )
            raise denied(f"python3 -{letter} is refused by the command policy (unknown or unsupported option).")
        index += 1
    if index < len(args):
        script = args[index]
        if script == "-":
            raise denied("python3 - (a program read from standard input) is refused by the command policy.")
        ctx.confine(script)
    return args


_NODE_FLAGS_OK = _words(
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


NPM_SUBCOMMANDS = ("run", "run-script", "rum", "urn", "test", "t", "tst", "ls", "list", "ll", "la")
_NPM_REFUSED = _words(
    "--script-shell --ignore-scripts --no-ignore-scripts --node-options --userconfig --globalconfig "
    "--prefix --shell --call --workspaces --workspace --include-workspace-root"
)


def _policy_npm(args: list[str], ctx: PolicyContext) -> list[str]:
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
    if hit := find_flag(before_separator, _NPM_REFUSED):
        raise denied(f"npm {hit} is refused by the command policy (the script shell and lifecycle hooks are pinned).")
    if sub in ("run", "run-script", "rum", "urn") and len(positional) > 1:
        check_npm_script_name(positional[1])
    # Pin the script shell and disable pre/post hooks, whatever the project's .npmrc says.
    return ["--ignore-scripts", "--script-shell=/bin/sh", *args]


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


# git -----------------------------------------------------------------------------------------------------

GIT_SUBCOMMANDS_READ = _words(
    "status diff log show blame annotate shortlog describe rev-parse rev-list ls-files ls-tree cat-file "
    "grep merge-base name-rev for-each-ref show-ref count-objects whatchanged range-diff diff-tree "
    "diff-index diff-files check-ignore check-attr reflog version config"
)
GIT_SUBCOMMANDS_WRITE = _words(
    "add commit restore checkout switch reset stash mv rm init branch tag merge cherry-pick revert rebase "
    "apply clean format-patch"
)
GIT_SUBCOMMANDS = GIT_SUBCOMMANDS_READ + GIT_SUBCOMMANDS_WRITE
#: Refused git subcommands with the reason (anything not allowed is refused; these get a precise message).
GIT_REFUSED_SUBCOMMANDS = {
    **dict.fromkeys(
        ("clone", "fetch", "pull", "push", "ls-remote", "remote", "submodule", "archive", "send-email", "request-pull"),
        "it talks to remote repositories (arbitrary transports and helpers run programs)",
    ),
    **dict.fromkeys(
        ("filter-branch", "bisect", "difftool", "mergetool", "hook", "maintenance", "instaweb", "daemon"),
        "it runs arbitrary commands or long-running services",
    ),
    **dict.fromkeys(("credential", "credential-store", "credential-cache"), "it handles credentials"),
}
_GIT_GLOBAL_FLAGS_OK = _words(
    "--no-pager -P --no-replace-objects --literal-pathspecs --glob-pathspecs --noglob-pathspecs "
    "--icase-pathspecs --no-optional-locks --version --help"
)
_GIT_GLOBAL_PATH_OPTIONS = ("-C", "--git-dir", "--work-tree")
GIT_REFUSED_FLAGS = _words(
    "--upload-pack --receive-pack --exec --output --ext-diff --textconv --open-files-in-pager --template "
    "--config --config-env --exec-path --extcmd --tool --interactive"
)
#: Subcommands that accept `--no-ext-diff --no-textconv` (injected so diff drivers never run).
GIT_DIFF_FAMILY = ("diff", "log", "show", "whatchanged", "format-patch", "diff-tree", "diff-index", "diff-files")
_GIT_CONFIG_READ = ("--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--get-color")
_GIT_CONFIG_WRITE = _words(
    "--add --replace-all --unset --unset-all --rename-section --remove-section --edit --file --blob"
)


def split_git_args(args: Sequence[str]) -> tuple[list[str], str | None, list[str]]:
    """(global options, subcommand, subcommand arguments) of a git argv (without `git`)."""
    index = 0
    global_options: list[str] = []
    while index < len(args):
        arg = args[index]
        if arg in ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"):
            global_options.extend(args[index : index + 2])
            index += 2
            continue
        if arg.startswith("-"):
            global_options.append(arg)
            index += 1
            continue
        return global_options, arg, list(args[index + 1 :])
    return global_options, None, []


def _policy_git(args: list[str], ctx: PolicyContext) -> list[str]:
    global_options, sub, rest = split_git_args(args)
    index = 0
    while index < len(global_options):
        option = global_options[index]
        name = option.split("=", 1)[0]
        if option in _GIT_GLOBAL_FLAGS_OK:
            index += 1
            continue
        if name in _GIT_GLOBAL_PATH_OPTIONS:
            value = option.split("=", 1)[1] if "=" in option else (global_options[index + 1 : index + 2] or [""])[0]
            if not value:
                raise invalid(f"git {name} needs a value.")
            ctx.confine(value)
            index += 1 if "=" in option else 2
            continue
        if name in ("-c", "--config-env"):
            raise denied(
                f"git {name} is refused by the command policy (configuration such as core.*, alias.* or "
                "diff.external runs programs); the server's git settings are fixed."
            )
        raise denied(
            f"git global option {name} is refused by the command policy; allowed: "
            f"{', '.join((*_GIT_GLOBAL_FLAGS_OK, *_GIT_GLOBAL_PATH_OPTIONS))}."
        )
    if sub is None:
        if any(option in ("--version", "--help") for option in global_options):
            return args
        raise invalid('git needs a subcommand, e.g. ["git", "status"].')
    if "--help" in global_options or "--help" in (rest[: rest.index("--")] if "--" in rest else rest):
        # `git X --help` / `git --help X` become `git help X`, which runs the viewer the repository config
        # names (man.viewer + man.<tool>.cmd, help.format=web + browser.<tool>.cmd): arbitrary commands.
        raise denied(
            f"git {sub[:40]} --help is refused by the command policy (git's help viewer is configurable by the "
            f"repository and runs programs); use `git {sub[:40]} -h` for the option summary."
        )
    if sub in GIT_REFUSED_SUBCOMMANDS:
        raise denied(f"git {sub} is refused by the command policy ({GIT_REFUSED_SUBCOMMANDS[sub]}).")
    if sub not in GIT_SUBCOMMANDS:
        raise denied(
            f"git {sub[:40]} is not an allowed git subcommand (aliases are not run either); allowed: "
            f"{', '.join(GIT_SUBCOMMANDS)}."
        )
    if hit := find_flag(rest, GIT_REFUSED_FLAGS):
        raise denied(
            f"git {sub} {hit} is refused by the command policy (it runs a program, writes a file outside git's "
            "control, or installs hooks)."
        )
    if sub in ("fetch", "clone", "ls-remote", "pull") and find_flag(rest, (), "u"):
        raise denied(f"git {sub} -u is refused by the command policy (it names the upload-pack program).")
    if sub == "grep" and (hit := find_flag(rest, (), "O")):
        raise denied("git grep -O is refused by the command policy (it runs a pager program on the matches).")
    if sub == "rebase" and (hit := find_flag(rest, (), "xi")):
        raise denied(f"git rebase {hit} is refused by the command policy (it runs commands / an editor).")
    if sub == "config":
        _check_git_config(rest)
    for arg in rest[: rest.index("--")] if "--" in rest else rest:
        if _names_denied_blob(arg, ctx):
            raise denied(
                f"git {sub} {arg[:80]!r} names a protected file (secrets such as .env files and keys are never "
                "read, not even from git's object store)."
            )
    if sub == "cat-file" and find_flag(rest, ("--filters", "--textconv")):
        raise denied("git cat-file --filters/--textconv are refused by the command policy (they run drivers).")
    if sub in GIT_DIFF_FAMILY:
        position = len(global_options)
        return [*args[: position + 1], "--no-ext-diff", "--no-textconv", *args[position + 1 :]]
    return args


def _names_denied_blob(arg: str, ctx: PolicyContext) -> bool:
    """Whether `REV:path` / `:path` / `:N:path` (git's blob syntax) names a path matching the deny globs."""
    if arg.startswith("-") or ":" not in arg:
        return False
    first = arg.split(":", 1)[1]
    staged = re.sub(r"^[0-3]:", "", first) if arg.startswith(":") else first
    return any(ctx.denied(path) for path in {first, staged, arg.rsplit(":", 1)[1]} if path)


def _check_git_config(rest: list[str]) -> None:
    if hit := find_flag(rest, _GIT_CONFIG_WRITE, "ef"):
        raise denied(f"git config {hit} is refused by the command policy (configuration is read-only here).")
    if rest and rest[0] in ("get", "list"):
        return
    reading = any(arg.split("=", 1)[0] in _GIT_CONFIG_READ for arg in rest)
    positional = [arg for arg in rest if not arg.startswith("-")]
    if not reading and len(positional) != 1:
        raise denied(
            "git config may only read configuration (`git config --get NAME`, `git config --list`); "
            "writing configuration is refused by the command policy."
        )


#: `-c` settings every git invocation gets: command-line config wins over the repository's `.git/config`.
GIT_HARDENING_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("sequence.editor", "true"),
    ("core.sshCommand", "false"),
    ("core.askPass", ""),
    ("core.attributesFile", "/dev/null"),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.ssh.defaultKeyCommand", "false"),
    ("log.showSignature", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("diff.ignoreSubmodules", "all"),
    ("status.submoduleSummary", "false"),
    ("submodule.recurse", "false"),
    ("interactive.diffFilter", "cat"),
    ("color.ui", "false"),
)
#: Driver settings named by the repository config (any driver name), and the harmless value they get.
_GIT_DRIVER_KEYS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^filter\.(.+)\.(clean|smudge)$", re.IGNORECASE), "cat"),
    (re.compile(r"^filter\.(.+)\.process$", re.IGNORECASE), ""),
    (re.compile(r"^diff\.(.+)\.textconv$", re.IGNORECASE), "cat"),
    (re.compile(r"^diff\.(.+)\.command$", re.IGNORECASE), ""),
    (re.compile(r"^diff\.external$", re.IGNORECASE), ""),
    (re.compile(r"^merge\.(.+)\.driver$", re.IGNORECASE), "false"),
    (re.compile(r"^trailer\.(.+)\.(cmd|command)$", re.IGNORECASE), ""),
)


def unsafe_git_config_names(config_names: Iterable[str]) -> list[str]:
    """Driver settings whose name cannot be overridden with `-c key=value` (an `=` in the driver name)."""
    return [
        name
        for name in config_names
        if ("=" in name or not name.isprintable()) and any(pattern.match(name) for pattern, _ in _GIT_DRIVER_KEYS)
    ]


def git_hardening_args(config_names: Iterable[str] = ()) -> list[str]:
    """`-c key=value` arguments: the fixed hardening plus neutral values for each driver the repo config names.

    `config_names` are the names from `git config --list --includes --name-only` in the repository.
    A driver's program is replaced, never run: clean/smudge become `cat` (identity), textconv `cat`,
    filter processes and external diff commands become empty (git then fails closed instead of running
    anything), merge drivers `false` (a conflict). `--no-ext-diff --no-textconv` are injected as well.
    """
    pairs = list(GIT_HARDENING_CONFIG)
    seen = {key.lower() for key, _ in pairs}
    for name in config_names:
        for pattern, value in _GIT_DRIVER_KEYS:
            if pattern.match(name) and name.lower() not in seen:
                seen.add(name.lower())
                pairs.append((name, value))
                if name.lower().startswith("filter."):
                    required = name.rsplit(".", 1)[0] + ".required"
                    if required.lower() not in seen:
                        seen.add(required.lower())
                        pairs.append((required, "false"))
    args: list[str] = []
    for key, value in pairs:
        args += ["-c", f"{key}={value}"]
    return args


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
_RUFF_SCAN_LIMIT = 5000


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
    starts = list(dict.fromkeys(starts))
    for start in starts:
        folder = start
        while True:
            found += [folder / name for name in _RUFF_CONFIG_NAMES if (folder / name).is_file()]
            parent = folder.parent
            if parent == folder or not _inside(parent, ctx):
                break
            folder = parent
    walks = itertools.chain.from_iterable(os.walk(start) for start in starts)
    for visited, (directory, dirnames, filenames) in enumerate(walks):
        if visited > _RUFF_SCAN_LIMIT:
            raise denied(
                "ruff: the directory tree is too large to check its configuration files; run it on a subfolder."
            )
        dirnames[:] = [name for name in dirnames if name not in (".git", "node_modules", ".venv", "__pycache__")]
        found += [Path(directory) / name for name in _RUFF_CONFIG_NAMES if name in filenames]
    return list(dict.fromkeys(found))


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
        _policy_git,
    ),
    "find": PolicyInfo(
        "find",
        "listing only",
        ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls", "-L", "-follow"),
        _policy_find,
    ),
    "rg": PolicyInfo(
        "rg",
        "no preprocessors, no symlink following",
        ("--pre", "--pre-glob", "-z/--search-zip", "-L/--follow"),
        _policy_rg,
    ),
    "grep": PolicyInfo("grep", "no symlink following", ("-R/--dereference-recursive",), _policy_grep),
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
        f"inside the roots; -m only for {', '.join(PYTHON_MODULES)} (pytest's policy applies to -m pytest)",
        ("-c", "-m (other modules)", "- (stdin)", "other long options"),
        _policy_python,
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
        ("install/ci/exec/publish/config/...", *_NPM_REFUSED),
        _policy_npm,
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
    if re.fullmatch(r"perl[0-9.]*", program):
        return POLICIES["perl"]
    if re.fullmatch(r"ruby[0-9.]*", program):
        return POLICIES["ruby"]
    return POLICIES["generic"]


def check_allow_list(programs: Iterable[str]) -> list[str]:
    """Validate a configured allow-list: bare names only, nothing from NEVER_ALLOWED (ValueError)."""
    result: list[str] = []
    for program in programs:
        name = program.strip()
        if not name:
            continue
        if "/" in name or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}", name):
            raise ValueError(f"allowed program {name!r} must be a bare program name (no path)")
        if name in NEVER_ALLOWED:
            raise ValueError(f"program {name!r} can never be allowed: {NEVER_ALLOWED[name]}")
        if name not in result:
            result.append(name)
    return result


# -- the guard -----------------------------------------------------------------------------------------


class CommandGuard:
    """Checks commands against an allow-list, a fixed search path, the policies and the path guard."""

    def __init__(
        self, path_guard: PathGuard, allowed_programs: Iterable[str], search_path: str = DEFAULT_SEARCH_PATH
    ) -> None:
        self._paths = path_guard
        self._allowed = tuple(check_allow_list(allowed_programs))
        self._search_path = search_path

    @property
    def allowed_programs(self) -> tuple[str, ...]:
        return self._allowed

    @property
    def search_path(self) -> str:
        return self._search_path

    @property
    def path_guard(self) -> PathGuard:
        return self._paths

    def executable(self, program: str) -> str | None:
        """The absolute executable of `program` on the fixed search path (None if not installed)."""
        return shutil.which(program, path=self._search_path)

    def resolve_program(self, program: str) -> tuple[str, str]:
        """(name, absolute executable) of an allowed program, or PERMISSION_DENIED / NOT_FOUND."""
        name = self.allowed_name(program)
        return name, self.locate(program, name)

    def allowed_name(self, program: str) -> str:
        """The program's name if it may run at all (PERMISSION_DENIED otherwise); nothing is looked up yet."""
        name = os.path.basename(program) if "/" in program else program
        if name in NEVER_ALLOWED:
            raise denied(f"{name!r} is never allowed: {NEVER_ALLOWED[name]}. Run the program you need directly.")
        if name not in self._allowed:
            raise denied(
                f"{name[:60]!r} is not on the allow-list of programs; allowed: {', '.join(self._allowed)} "
                "(see list_safe_commands). The allow-list is set by the server's operator."
            )
        if "/" in program and not os.path.isabs(program):
            raise denied(f"{program[:200]!r} is a relative program path; give the bare name {name!r} instead.")
        return name

    def locate(self, program: str, name: str) -> str:
        """The absolute executable on the fixed search path; an absolute `program` must be exactly it."""
        executable = self.executable(name)
        if "/" in program and (executable is None or os.path.realpath(program) != os.path.realpath(executable)):
            raise denied(
                f"{program[:200]!r} is not the allowed {name!r} from the fixed search path ({self._search_path}); "
                f"give the bare name {name!r} instead."
            )
        if executable is None:
            raise ToolFailure(
                ErrorCode.NOT_FOUND,
                f"{name!r} is allowed but not installed on the server's search path ({self._search_path}).",
            )
        return executable

    def resolve_cwd(self, cwd: str | None) -> Path:
        """The checked real working directory (default: the first root)."""
        if not self._paths.roots:
            raise self._paths_failure()
        if cwd is None or cwd.strip() in ("", "."):
            return self._paths.roots[0]
        path = self._paths.resolve(cwd, purpose="list")
        if not path.is_dir():
            raise invalid(f"cwd {cwd[:200]!r} is not a directory.")
        return path

    def _paths_failure(self) -> ToolFailure:
        return denied(
            "no allowed roots are configured, so no command can run; start the server with `--root DIR` "
            "(repeatable) or set MCP_SECTIONS_ROOTS."
        )

    def confine(self, value: str, cwd: Path) -> Path:
        """A path argument, relative to `cwd`, checked inside the roots (existing or not)."""
        candidate = value if os.path.isabs(value) else os.path.join(cwd, value)
        return self._paths.resolve(candidate, purpose="create")

    def check(self, command: str | Sequence[str], cwd: str | None = None) -> CheckedCommand:
        """The checked command, or a ToolFailure (INVALID_INPUT / PERMISSION_DENIED / NOT_FOUND)."""
        argv = split_command(command)
        name = self.allowed_name(argv[0])
        workdir = self.resolve_cwd(cwd)
        info = policy_for(name)
        ctx = PolicyContext(
            program=name,
            cwd=workdir,
            confine=lambda value: self.confine(value, workdir),
            denied=self._paths.is_denied_relative,
        )
        assert info.check is not None
        args = info.check(list(argv[1:]), ctx)
        for arg in argv[1:]:
            for value in path_candidates(arg, workdir):
                self.confine(value, workdir)
        executable = self.locate(argv[0], name)  # last: a refused command is refused even where not installed
        return CheckedCommand(program=name, executable=executable, args=tuple(args), cwd=workdir, policy=info.name)

    def describe(self) -> list[dict[str, object]]:
        """The allow-list with each program's executable and policy (for list_safe_commands)."""
        rows: list[dict[str, object]] = []
        for program in self._allowed:
            info = policy_for(program)
            rows.append(
                {
                    "program": program,
                    "executable": self.executable(program),
                    "why_allowed": DEFAULT_ALLOWED_PROGRAMS.get(program, "added by the server's operator"),
                    "policy": info.summary,
                    "refused": list(info.refused),
                }
            )
        return rows


def path_candidates(arg: str, cwd: Path) -> list[str]:
    """The parts of an argument that may name a file and are therefore confined to the roots."""
    values: list[str] = []
    if arg.startswith("--"):
        if "=" in arg:
            values.append(arg.split("=", 1)[1])
    elif arg.startswith("-") and len(arg) > 2:
        if "=" in arg:
            values.append(arg.split("=", 1)[1])
        if "/" in arg[2:]:
            values.append(arg[2:])
    elif arg not in ("", "-"):
        values.append(arg)
    return [value for value in values if value and looks_like_path(value, cwd)]


def looks_like_path(value: str, cwd: Path) -> bool:
    """Whether a value may name a file: it has a `/`, is `.`/`..`, or names an existing entry of `cwd`."""
    if any(len(part.encode("utf-8", "surrogatepass")) > 255 for part in value.split("/")) or len(value) > 4096:
        return False  # no file system accepts it as a path: a message or a pattern, not a file
    if "/" in value or value in (".", "..") or value.startswith("~"):
        return True
    try:
        return os.path.lexists(os.path.join(cwd, value))
    except (OSError, ValueError):
        return False
