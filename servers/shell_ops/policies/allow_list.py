"""Which programs shell_ops may run: the default allow-list with the reason for each, the programs never
allowed whatever the configuration says, and the check of a configured allow-list."""

from __future__ import annotations

import re
from collections.abc import Iterable

from mcp_sections.servers.shell_ops.policies.syntax import words

#: The default allow-list, each entry with the reason it is there (shown by `list_safe_commands`). What each may do
#: inside the sandbox and what its policy refuses with the sandbox off is its policy's (`policies/programs.py`).
DEFAULT_ALLOWED_PROGRAMS: dict[str, str] = {
    "ls": "lists directories; no option runs code or writes files",
    "cat": "prints files; read-only",
    "head": "prints the start of files; read-only",
    "tail": "prints the end of files; read-only (`-f` ends at the timeout)",
    "wc": "counts lines/words/bytes; read-only",
    "grep": "searches text; read-only (`-f FILE` is path-confined, -R refused: it follows symlinks)",
    "rg": "ripgrep; read-only once `--pre` (runs a program per file) is refused",
    "find": "finds files (with the sandbox off or strict_arguments: read-only, -exec/-delete/-fprint* refused)",
    "sort": "sorts text (with the sandbox off or strict_arguments: read-only, -o and --compress-program refused)",
    "diff": "compares files; read-only (symbolic links are not followed)",
    "stat": "file metadata; read-only",
    "du": "disk usage; read-only",
    "jq": "JSON queries; its language cannot run programs or write files (modules, which read any path, are refused)",
    "git": "version control: local subcommands only, hardened so repository config runs nothing",
    "python3": "runs project scripts, modules (`-m pytest`, `-m pip install`) and inline code (`-c`), confined; with "
    "the sandbox off `-c`, `-m timeit` and `pip install` are refused",
    "python": "same policy as python3 (in a project with a venv: the venv's interpreter)",
    "pip": "the project environment's pip; `install -e .`, `-r requirements.txt` reach the registries only (with the "
    "sandbox off it only reads: file_ops' install_package installs)",
    "pip3": "same policy as pip",
    "node": "runs project scripts and inline code, confined (with the sandbox off -e/--eval/-p/--require/--import and "
    "other flags are refused)",
    "npm": "scripts, `npm ci`/`install` (registries only); never `exec` (with the sandbox off only run/test/ls)",
    "npx": "runs a tool installed in the project's node_modules/.bin, never one it would download; -c/--call and "
    "-p/--package are refused",
    "pytest": "runs the project's tests (with the sandbox off -o/--override-ini, -p (except `no:`), --pdb are refused)",
    "ruff": "Python linter/formatter; writes only files inside the roots",
    "mypy": "Python type checker; --install-types is refused (it installs packages)",
    "uv": "`uv run CMD` (CMD checked as a command of its own); `uv sync`, `lock`, `add`, `uv pip install` reach the "
    "registries only (with the sandbox off nothing installs)",
    "tox": "runs the project's tox environments (its own configuration is code; no network inside the sandbox)",
    "nox": "runs the project's noxfile sessions (its own code; no network inside the sandbox)",
    "make": "runs the project's Makefile (with the sandbox off variable overrides and --eval are refused)",
    "cargo": "builds and tests a Rust project (no network inside the sandbox: dependencies must be vendored)",
    "go": "builds and tests a Go module (no network inside the sandbox: dependencies must be vendored)",
}

#: Always the system's own programs, found on the trusted search path only: never taken from a project environment
#: nor run by a path inside the roots. They are the read-only tools an operator may allow on their own (a planted
#: `.venv/bin/cat` must not turn `cat` into the project's code), and git, whose hardened repository probes run
#: outside the sandbox.
SYSTEM_PROGRAMS = frozenset(words("ls cat head tail wc grep rg find sort diff stat du jq git make tar"))

#: Where every refusal of a program points: the settings that allow it.
ALLOW_HINT = (
    "To allow it, the server's operator adds it to `allowed_programs` in [sections.shell_ops] (config.example.toml; "
    "environment: MCP_SECTIONS_SHELL_OPS_ALLOWED_PROGRAMS, comma-separated)."
)
SEARCH_PATH_HINT = (
    "install it, create a project environment that provides it (a `.venv` or `node_modules/.bin` in the working "
    "directory or above it), or have the operator add its directory to `search_path` in [sections.shell_ops] "
    "(config.example.toml; environment: MCP_SECTIONS_SHELL_OPS_SEARCH_PATH)"
)
PROJECT_PROGRAMS_HINT = (
    "set `project_programs = true` in [sections.shell_ops] (config.example.toml; environment: "
    "MCP_SECTIONS_SHELL_OPS_PROJECT_PROGRAMS)"
)

#: Never allowed, not even through configuration: they exist to run other programs or evaluate code.
NEVER_ALLOWED: dict[str, str] = {
    **dict.fromkeys(
        ("sh", "bash", "dash", "zsh", "ksh", "mksh", "csh", "tcsh", "fish", "ash", "rbash", "pwsh", "powershell"),
        "a shell: it interprets its arguments as code",
    ),
    **dict.fromkeys(("busybox", "toybox"), "a multi-call binary that includes a shell"),
    **dict.fromkeys(
        words(
            "env xargs sudo su doas pkexec runuser nohup timeout nice ionice chrt taskset setsid stdbuf unbuffer "
            "script time command exec eval builtin watch flock chroot unshare nsenter systemd-run strace ltrace "
            "gdb parallel at batch crontab ssh rsync socat nc ncat"
        ),
        "a wrapper that runs another program (or a remote one): it would bypass the allow-list",
    ),
    **dict.fromkeys(
        ("awk", "gawk", "mawk", "nawk", "sed", "ed", "ex", "vi", "vim", "nvim", "emacs", "less", "more", "man", "dc"),
        "its scripts are code (system(), `e`, `w file`, `!cmd`), so arguments cannot be made safe",
    ),
    **dict.fromkeys(
        words("php lua luajit Rscript tclsh wish osascript deno bun java jshell"),
        "an interpreter or installer without an argument policy here",
    ),
}


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
