"""git: local subcommands only, refused flags, config reads only, and the hardening that keeps a repository's
own configuration from running programs (fsmonitor, pager, external diff, hooks...)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from mcp_sections.servers.shell_ops.policies.policy import PolicyContext
from mcp_sections.servers.shell_ops.policies.syntax import denied, find_flag, invalid, short_cluster, words

# git -----------------------------------------------------------------------------------------------------

GIT_SUBCOMMANDS_READ = words(
    "status diff log show blame annotate shortlog describe rev-parse rev-list ls-files ls-tree cat-file "
    "grep merge-base name-rev for-each-ref show-ref count-objects whatchanged range-diff diff-tree "
    "diff-index diff-files check-ignore check-attr reflog version config"
)
GIT_SUBCOMMANDS_WRITE = words(
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
_GIT_GLOBAL_FLAGS_OK = words(
    "--no-pager -P --no-replace-objects --literal-pathspecs --glob-pathspecs --noglob-pathspecs "
    "--icase-pathspecs --no-optional-locks --version --help"
)
_GIT_GLOBAL_PATH_OPTIONS = ("-C", "--git-dir", "--work-tree")
GIT_REFUSED_FLAGS = words(
    "--upload-pack --receive-pack --exec --output --ext-diff --textconv --open-files-in-pager --template "
    "--config --config-env --exec-path --extcmd --tool --interactive --unsafe-paths"
)
#: Subcommands that accept `--no-ext-diff --no-textconv` (injected so diff drivers never run).
GIT_DIFF_FAMILY = ("diff", "log", "show", "whatchanged", "format-patch", "diff-tree", "diff-index", "diff-files")
_GIT_CONFIG_READ = ("--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--get-color")
_GIT_CONFIG_WRITE = words(
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


def policy_git(args: list[str], ctx: PolicyContext) -> list[str]:
    global_options, sub, rest = split_git_args(args)
    _check_global_options(global_options)
    if sub is None:
        if any(option in ("--version", "--help") for option in global_options):
            return args
        raise invalid('git needs a subcommand, e.g. ["git", "status"].')
    _check_subcommand(sub, global_options, rest)
    _check_flags(sub, rest)
    _refuse_secret_names(sub, rest, ctx)
    if sub == "cat-file" and find_flag(rest, ("--filters", "--textconv")):
        raise denied("git cat-file --filters/--textconv are refused by the command policy (they run drivers).")
    if sub in GIT_DIFF_FAMILY:
        position = len(global_options)
        return [*args[: position + 1], "--no-ext-diff", "--no-textconv", *args[position + 1 :]]
    return args


def _check_global_options(global_options: list[str]) -> None:
    """Only the harmless global options, and the repository's location with a value (the guard confines it)."""
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
                raise invalid(f"git {name} needs a value.")  # confined as a base directory (option_classes)
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


def _check_subcommand(sub: str, global_options: list[str], rest: list[str]) -> None:
    """An allowed subcommand, not asked for its --help (git's help viewer runs programs)."""
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


def _check_flags(sub: str, rest: list[str]) -> None:
    """The subcommand's flags that run programs, write outside git's control or install hooks; config reads only."""
    if hit := find_flag(rest, GIT_REFUSED_FLAGS):
        raise denied(
            f"git {sub} {hit} is refused by the command policy (it runs a program, writes a file outside git's "
            "control, or installs hooks)."
        )
    if sub in ("fetch", "clone", "ls-remote", "pull") and find_flag(rest, (), "u"):
        raise denied(f"git {sub} -u is refused by the command policy (it names the upload-pack program).")
    if sub == "grep" and find_flag(rest, (), "O"):
        raise denied("git grep -O is refused by the command policy (it runs a pager program on the matches).")
    if sub == "rebase" and (hit := find_flag(rest, (), "xi")):
        raise denied(f"git rebase {hit} is refused by the command policy (it runs commands / an editor).")
    if sub == "config":
        _check_git_config(rest)


#: Global options the hardened repository probes also get (they run outside the sandbox): where the repository is.
GIT_PROBE_OPTIONS = _GIT_GLOBAL_PATH_OPTIONS


def split_probe_options(global_options: Sequence[str]) -> tuple[list[str], list[str]]:
    """git's global options split in two: those the host-side probes get too (the repository's location: `-C`,
    `--git-dir`, `--work-tree`, confined to the roots by the guard), and the rest (`-c`, `--exec-path`, ...), which
    reach only the sandboxed command: on the host they would run or load programs."""
    probe: list[str] = []
    others: list[str] = []
    index = 0
    while index < len(global_options):
        option = global_options[index]
        width = (
            2 if option in ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env") else 1
        )
        (probe if option.split("=", 1)[0] in GIT_PROBE_OPTIONS else others).extend(
            global_options[index : index + width]
        )
        index += width
    return probe, others


def policy_git_confined(args: list[str], ctx: PolicyContext) -> list[str]:
    """git inside the sandbox: what it runs (hooks, aliases, `-c` programs, drivers) is confined like any program, so
    only two rules remain. The repository's location options must have a value (the guard confines it: the hardened
    probes run outside the sandbox, in that repository), and secret files are not named in git's history (the sandbox
    hides a `.env` file, never its copies in the object store)."""
    global_options, sub, rest = split_git_args(args)
    for index, option in enumerate(global_options):
        name = option.split("=", 1)[0]
        if name in _GIT_GLOBAL_PATH_OPTIONS and "=" not in option and index + 1 >= len(global_options):
            raise invalid(f"git {name} needs a value.")
    if sub is not None:
        _refuse_secret_names(sub, rest, ctx)
    return args


def _refuse_secret_names(sub: str, rest: list[str], ctx: PolicyContext) -> None:
    for spec in rest[rest.index("--") + 1 :] if "--" in rest else []:
        plain = re.sub(r"^:(\([^)]*\)|[/!^]+)", "", spec)  # pathspec magic: `:(glob)*.env`, `:/.env`
        if ctx.denied(plain) or ctx.denied(plain.rsplit("/", 1)[-1]):
            raise denied(
                f"git {sub} pathspec {spec[:80]!r} names protected files (secrets such as .env files and keys are "
                "never read, not even from git's history)."
            )
    options = rest[: rest.index("--")] if "--" in rest else rest
    for arg in _without_messages(options) if sub in GIT_MESSAGE_SUBCOMMANDS else options:
        if _names_denied_blob(arg, ctx):
            raise denied(
                f"git {sub} {arg[:80]!r} names a protected file (secrets such as .env files and keys are never "
                "read, not even from git's object store)."
            )


#: Subcommands whose `-m` takes a message (elsewhere `-m` is a flag: `git show -m`, or a parent number).
GIT_MESSAGE_SUBCOMMANDS = ("commit", "tag", "merge", "notes", "stash")


def _without_messages(args: Sequence[str]) -> list[str]:
    """`args` without the text of `-m MSG`, `-amMSG`, `--message=MSG`: a commit message `docs: describe .env` names
    no blob."""
    kept: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        cluster = short_cluster(arg)
        if arg == "--message" or (cluster and cluster.endswith("m")):
            skip = True
            continue
        if arg.startswith("--message=") or (cluster and "m" in cluster):
            continue
        kept.append(arg)
    return kept


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
