"""Classes of options that defeat argument-by-argument path confinement, handled once for every program.

Checking each argument that looks like a path is not enough when an option changes how the program reads its
other arguments. Four classes, each with one rule:

- **attached values**: a short option's value may be glued to it or to a cluster (`-qf<file>`, `-o<dir>`) and
  any argument may carry a `key=value` value (`-X pycache_prefix=<dir>`). Every suffix of a short-option
  cluster and every value after `=` that looks like a path is confined (`attached_values`).
- **base directory**: `git -C`, `--git-dir`, `--work-tree`, `make -C`, `tar -C`, `pytest --rootdir` move the
  directory that relative paths are read from. Their value is confined, and every relative path argument must be
  inside the roots from that directory too (`base_directories`).
- **paths from a file**: `--files0-from`, `find -files0-from`, `tar -T`, `git --pathspec-from-file` read a list
  of paths that the guard never sees. Refused: name the paths as arguments.
- **symbolic links followed**: `ls -L`, `du -L`, `stat -L`, `find -L`, `grep -R`, `rg -L`, `tar -h` read what a
  link points at, possibly outside the roots. Refused.

The OS sandbox (shared/confinement/sandbox.py) hides everything outside the roots, so these rules apply only where the
operator turned it off (the argument rules are the only layer there); inside it only git's base-directory options stay
confined, since git's hardened probes run outside the sandbox in the repository they name.

Option spellings: `--name` matches as getopt_long does (unambiguous prefixes too), `-x` is a short letter found
anywhere in a cluster, `-name` (one dash, several letters) is an exact `find`-style word.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from mcp_sections.servers.shell_ops.policies.git import split_git_args
from mcp_sections.servers.shell_ops.policies.syntax import denied, matches_long, short_cluster


@dataclass(frozen=True)
class OptionClasses:
    """The options of one program that belong to each class."""

    base_directory: tuple[str, ...] = ()
    paths_from_file: tuple[str, ...] = ()
    follows_symlinks: tuple[str, ...] = ()
    leading: Callable[[Sequence[str]], Sequence[str]] | None = None
    """Where base-directory options are read, when only some arguments can hold them (git's global options:
    `git log -C` after the subcommand detects copies)."""


_FILES0 = ("--files0-from",)
OPTION_CLASSES: dict[str, OptionClasses] = {
    "ls": OptionClasses(
        follows_symlinks=(
            "-L",
            "-H",
            "--dereference",
            "--dereference-command-line",
            "--dereference-command-line-symlink-to-dir",
        )
    ),
    "du": OptionClasses(
        paths_from_file=_FILES0, follows_symlinks=("-L", "-D", "-H", "--dereference", "--dereference-args")
    ),
    "wc": OptionClasses(paths_from_file=_FILES0),
    "sort": OptionClasses(paths_from_file=_FILES0),
    "stat": OptionClasses(follows_symlinks=("-L", "--dereference")),
    "find": OptionClasses(paths_from_file=("-files0-from",), follows_symlinks=("-L", "-H", "-follow")),
    "grep": OptionClasses(follows_symlinks=("-R", "--dereference-recursive")),
    "rg": OptionClasses(follows_symlinks=("-L", "--follow")),
    "git": OptionClasses(
        base_directory=("-C", "--git-dir", "--work-tree"),
        paths_from_file=("--pathspec-from-file",),
        leading=lambda args: split_git_args(args)[0],
    ),
    "tar": OptionClasses(
        base_directory=("-C", "--directory"),
        paths_from_file=("-T", "--files-from"),
        follows_symlinks=("-h", "--dereference"),
    ),
    "make": OptionClasses(base_directory=("-C", "--directory", "-I", "--include-dir")),
    "pytest": OptionClasses(base_directory=("--rootdir", "--confcutdir")),
    "npm": OptionClasses(base_directory=("--prefix",)),
    "cp": OptionClasses(follows_symlinks=("-L", "-H", "--dereference")),
    "chmod": OptionClasses(follows_symlinks=("-L", "-H", "--dereference")),
    "chown": OptionClasses(follows_symlinks=("-L", "-H", "--dereference")),
}


def classes_for(program: str) -> OptionClasses:
    return OPTION_CLASSES.get(program, OptionClasses())


def check_refused_classes(program: str, args: Sequence[str]) -> None:
    """PERMISSION_DENIED for an option that reads paths from a file or follows symbolic links."""
    classes = classes_for(program)
    if hit := _find(args, classes.paths_from_file):
        raise denied(
            f"{program} {hit} is refused by the command policy (it reads a list of paths from a file, which the "
            "guard cannot check); name the files as arguments instead."
        )
    if hit := _find(args, classes.follows_symlinks):
        raise denied(
            f"{program} {hit} is refused by the command policy (it follows symbolic links, which may point outside "
            "the roots); name the link's target inside the roots instead."
        )


def class_refusals(program: str) -> list[str]:
    """The refused options of the program's classes, as `list_safe_commands` shows them."""
    classes = classes_for(program)
    return [*classes.paths_from_file, *classes.follows_symlinks]


def base_directories(program: str, args: Sequence[str]) -> list[str]:
    """The values given to the program's base-directory options, in the order the program applies them
    (`git -C a -C b` → ["a", "b"]: git, make and tar read each relative to the one before)."""
    classes = classes_for(program)
    where = list(_options_part(classes.leading(args) if classes.leading else args))
    values: list[str] = []
    for index, arg in enumerate(where):
        following = where[index + 1] if index + 1 < len(where) else ""
        for option in classes.base_directory:
            if (value := _value_at(arg, following, option)) is not None:
                if value:
                    values.append(value)
                break
    return values


_SETTING = re.compile(r"^[A-Za-z_][\w.-]*=")


def attached_values(arg: str) -> list[str]:
    """Values an argument may carry glued to an option: every suffix of a short-option cluster after its first
    letter (`-qfFILE` → `fFILE`, `FILE`, ...), every text after an `=` of an option, and the value of a
    `name=value` setting (`pycache_prefix=DIR`, the value of `python3 -X`)."""
    values: list[str] = []
    cluster = short_cluster(arg)
    if cluster:
        values += [cluster[index:] for index in range(1, len(cluster))]
    if arg.startswith("-"):
        position = arg.find("=")
        while position != -1:
            values.append(arg[position + 1 :])
            position = arg.find("=", position + 1)
    elif _SETTING.match(arg):
        values.append(arg.split("=", 1)[1])
    return [value for value in dict.fromkeys(values) if value]


def _find(args: Sequence[str], options: Sequence[str]) -> str | None:
    for arg in _options_part(args):
        for option in options:
            if _spells(arg, option):
                return option
    return None


def _spells(arg: str, option: str) -> bool:
    if option.startswith("--"):
        return matches_long(arg, (option,)) is not None
    if len(option) == 2:
        return option[1] in short_cluster(arg)
    return arg == option


def _value_at(arg: str, following: str, option: str) -> str | None:
    """The value `arg` gives `option` (`--opt=V`, `--opt V`, `-oV`, `-xoV`, `-o V`), or None if it is not that
    option."""
    if option.startswith("--"):
        if matches_long(arg, (option,)) is None:
            return None
        return arg.split("=", 1)[1] if "=" in arg else following
    if len(option) == 2:
        cluster = short_cluster(arg)
        if option[1] not in cluster:
            return None
        return cluster[cluster.index(option[1]) + 1 :] or following
    return following if arg == option else None


def _options_part(args: Sequence[str]) -> Iterator[str]:
    """Arguments up to `--` (after it, everything is an operand)."""
    for arg in args:
        if arg == "--":
            return
        yield arg
