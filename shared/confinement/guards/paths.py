"""The path guard: every file-touching tool turns a caller's path into a checked real path here.

Rules (written against the reference filesystem server's CVE-2025-53110 / CVE-2025-53109):

- roots and targets are compared as *real* paths (all symlinks resolved); a path is inside a root when
  it equals the root or starts with the root plus a separator — never a plain string prefix, so
  `/root_evil` is not inside `/root`;
- relative paths resolve against the FIRST root, never the process's working directory;
- a symlink in any component that leads outside the roots is refused, for every purpose; for a target
  that does not exist yet the real path of its nearest existing ancestor decides; dangling symlinks
  are never written through, symlink loops are refused;
- NUL bytes, empty and over-long paths are INVALID_INPUT; FIFOs, sockets and devices are refused;
- the roots themselves (and their ancestors) are never deleted; an existing file with several hard
  links is never opened for writing in place;
- paths matching the deny globs (secrets: `.env`, keys, ...) are refused, whether matched by the name
  the caller used or by the real name behind a symlink;
- the suite's own state (`private`: its data and cache directories, its config file) lies outside the roots
  even when a root contains it (e.g. a root at the home directory): no tool reads or rewrites the audit log,
  the databases or the settings that confine it; the rest of the suite's trusted base
  (`shared.confinement.trusted_base`: the interpreter and its prefixes, the suite's code and launcher, the programs it
  runs unconfined, the files that decide how a client launches it) may be read, never written, moved or deleted; the
  directories and links on the way from a root to any of it are never deleted, moved or replaced;
- a refused path never reveals whether something exists outside the roots: outside-the-roots
  refusals are decided before anything there is looked at, and say the same thing either way.

TOCTOU: `resolve` decides on the state of the file system at that instant. The `open_*` helpers
below narrow the window for the operations that matter: they open with `O_NOFOLLOW` (and directories
with `O_DIRECTORY`), check the opened object with `fstat`, and re-check the real path of the opened
descriptor (`/proc/self/fd`) against the roots before any byte is read or written.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import re
import stat
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.ground.locations import is_inside

if TYPE_CHECKING:
    from mcp_sections.shared.confinement.trusted_base import Part, Way

Purpose = Literal["read", "write", "create", "list", "delete", "execute"]
PURPOSES: tuple[str, ...] = ("read", "write", "create", "list", "delete", "execute")

MAX_PATH_LENGTH = 4096
MAX_COMPONENT_LENGTH = 255

SECRET_FILE_GLOBS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    "credentials.json",
    ".htpasswd",
    "*.kdbx",
)
"""Names of files that hold credentials (environment files, keys, password stores); lower-case globs."""
DEFAULT_DENY_GLOBS: tuple[str, ...] = (*SECRET_FILE_GLOBS, ".ssh", ".gnupg", ".aws")

_NO_ROOTS_MESSAGE = (
    "no allowed roots are configured, so no path can be used; start the server with `--root DIR` "
    "(repeatable) or set MCP_SECTIONS_ROOTS, or connect with a client that offers MCP roots."
)

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)


def _shown(path: str) -> str:
    """The caller's path, shortened for an error message (it is their own input; nothing is revealed)."""
    text = path.replace("\x00", "\\0")
    return text if len(text) <= 200 else text[:197] + "..."


def is_special_mode(mode: int) -> bool:
    """FIFOs, sockets, character and block devices: never opened by a tool."""
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode)


class PathGuard:
    """Checks caller-supplied paths against a set of allowed roots. Immutable and thread-safe."""

    def __init__(
        self,
        roots: Sequence[Path | str],
        deny_globs: Sequence[str] = DEFAULT_DENY_GLOBS,
        *,
        no_roots_message: str | None = None,
        allow_hard_links: bool = False,
        private: Sequence[Path | str] = (),
        roots_tool: str | None = None,
    ) -> None:
        """`allow_hard_links`: read regular files that have more than one name (refused by default: the other
        name may be a secret or lie outside the roots, and names are what the deny-list matches).
        `private`: the suite's own files and directories (`Settings.own_state_paths()`), never inside a root.
        `roots_tool`: the tool of the caller's section that lists the roots, named when a path is outside them (a tool
        of another section cannot be called there: behind the gateway it is reached through its own section)."""
        self._allow_hard_links = allow_hard_links
        self._roots_tool = roots_tool
        self._private: tuple[str, ...] = tuple(
            dict.fromkeys(
                os.path.realpath(os.fspath(p)) for p in private if os.fspath(p) and "\x00" not in os.fspath(p)
            )
        )
        real: list[str] = []
        missing: list[str] = []
        for root in roots:
            text = os.fspath(root)
            if not text or "\x00" in text:
                continue
            resolved = os.path.realpath(os.path.expanduser(text))
            if not os.path.isdir(resolved):
                missing.append(text)
            elif resolved not in real:
                real.append(resolved)
        self._roots: tuple[str, ...] = tuple(real)
        self._deny_globs: tuple[str, ...] = tuple(glob.strip() for glob in deny_globs if glob.strip())
        self._name_globs = tuple(g.lower() for g in self._deny_globs if "/" not in g)
        self._name_regex = (
            re.compile("|".join(f"(?:{fnmatch.translate(glob)})" for glob in self._name_globs))
            if self._name_globs
            else None
        )
        self._path_globs = tuple(g.lower() for g in self._deny_globs if "/" in g)
        inside = [p for p in self._private if any(is_inside(p, root) for root in self._roots)]
        self._private_inside_roots = tuple(
            Path(p) for p in inside if not any(p != other and is_inside(p, other) for other in inside)
        )
        from mcp_sections.shared.confinement.trusted_base import process_base

        names = [os.path.abspath(os.fspath(p)) for p in private if os.fspath(p) and "\x00" not in os.fspath(p)]
        self._base = process_base().with_state((name, os.path.realpath(name), "own state") for name in names)
        self._protected = self._base.read_only(self._roots)
        self._protected_inside_roots = tuple(
            Path(p) for p in self._protected if any(is_inside(p, root) and p != root for root in self._roots)
        )
        self._way = self._base.way(self._roots)
        way = (*self._way.pinned, *self._way.links, *self._way.fixed)
        self._pinned = tuple(path for path in dict.fromkeys(way) if os.fspath(path) not in self._roots)
        self._no_roots_message = no_roots_message or _NO_ROOTS_MESSAGE
        if missing and not real and no_roots_message is None:
            self._no_roots_message = (
                f"the configured roots are not existing directories ({', '.join(missing[:5])}), so no path can be "
                "used; fix `--root DIR` / MCP_SECTIONS_ROOTS."
            )

    # -- configuration -----------------------------------------------------------------------------

    @property
    def roots(self) -> tuple[Path, ...]:
        """The allowed roots as real paths, de-duplicated, in order (the first is the default)."""
        return tuple(Path(root) for root in self._roots)

    @property
    def deny_globs(self) -> tuple[str, ...]:
        return self._deny_globs

    @property
    def private(self) -> tuple[Path, ...]:
        """The suite's own state (real paths): outside the roots whatever the roots are."""
        return tuple(Path(path) for path in self._private)

    def private_inside_roots(self) -> tuple[Path, ...]:
        """The private paths that a root contains (outermost only): what walks skip and sandboxes hide."""
        return self._private_inside_roots

    def protected_inside_roots(self) -> tuple[Path, ...]:
        """The suite's own installation where a root contains it (a checkout served over itself): read-only."""
        return self._protected_inside_roots

    def pinned_inside_roots(self) -> tuple[Path, ...]:
        """The directories and links on the way from a root to a part of the trusted base inside it (`~/.local`,
        `~/.local/share`, a dotfiles `~/.config` link, the home directory): they may be entered and hold other entries,
        but tools never delete, move or replace them; sandboxes pin them (`way_inside_roots`), so that nothing can move
        the suite's state or installation out from under what protects it (`shared.confinement.trusted_base`)."""
        return self._pinned

    def way_inside_roots(self) -> Way:
        """The way to the trusted base inside the roots: directories to pin, links to pin, directories to fix."""
        return self._way

    def state_paths(self) -> tuple[Path, ...]:
        """Every own-state path (real), inside a root or not: a sandbox hides those that any bind of it shows."""
        return tuple(Path(path) for path in self._private)

    def base_part(self, real: str) -> Part | None:
        """The part of the trusted base that holds `real` (a real path), if any."""
        for part in self._base.parts:
            if is_inside(real, part.real):
                return part
        return None

    def with_roots(self, roots: Iterable[Path | str], *, no_roots_message: str | None = None) -> PathGuard:
        """A copy of this guard with other roots (same deny globs and private paths)."""
        return PathGuard(
            list(roots),
            self._deny_globs,
            no_roots_message=no_roots_message,
            allow_hard_links=self._allow_hard_links,
            private=self._private,
            roots_tool=self._roots_tool,
        )

    def __repr__(self) -> str:
        return f"PathGuard(roots={list(self._roots)!r})"

    # -- queries -----------------------------------------------------------------------------------

    def readable_links(self, info: os.stat_result) -> bool:
        """Whether a regular file with these stat results may be read: one name only, unless hard links are allowed."""
        return info.st_nlink <= 1 or self._allow_hard_links or not stat.S_ISREG(info.st_mode)

    def contains(self, path: Path | str) -> bool:
        """Whether the real path of `path` lies inside one of the roots."""
        text = os.fspath(path)
        if not text or "\x00" in text:
            return False
        return self._root_of(os.path.realpath(text)) is not None

    def allows(self, path: Path | str) -> bool:
        """Whether the real path of `path` lies inside the roots and matches no deny glob (is no secret): the quiet
        check of a file the suite reads on its own (a manifest, `.git`, a venv), skipped when refused."""
        text = os.fspath(path)
        if not text or "\x00" in text:
            return False
        real = os.path.realpath(text)
        return self._root_of(real) is not None and not self.is_denied(real)

    def root_of(self, path: Path | str) -> Path | None:
        """The root that contains the (already real) path, or None."""
        root = self._root_of(os.fspath(path))
        return Path(root) if root is not None else None

    def is_root(self, path: Path | str) -> bool:
        return os.fspath(path) in self._roots

    def relative(self, path: Path | str) -> str:
        """`path` relative to its root (posix separators), for display; '.' for a root itself."""
        text = os.fspath(path)
        root = self._root_of(text)
        if root is None:
            return text
        rel = os.path.relpath(text, root)
        return rel.replace(os.sep, "/")

    def is_denied(self, path: Path | str) -> bool:
        """Whether a real path inside the roots matches a deny glob (by any component)."""
        text = os.fspath(path)
        root = self._root_of(text)
        rel = os.path.relpath(text, root) if root is not None else text
        return self._denied_relative(rel)

    def is_denied_relative(self, relative: str) -> bool:
        """Whether a root-relative path (e.g. the path part of git's `HEAD:sub/.env`) matches a deny glob."""
        return self._denied_relative(relative)

    def is_denied_name(self, name: str) -> bool:
        """Whether a single file name matches a deny glob (cheap check for directory walks)."""
        return self._name_regex is not None and self._name_regex.match(name.lower()) is not None

    def entry_escapes(self, path: Path | str) -> bool:
        """For walks: whether a symlink entry resolves outside the roots (or dangles or loops)."""
        real = os.path.realpath(os.fspath(path))
        if self._root_of(real) is None:
            return True
        try:
            return stat.S_ISLNK(os.lstat(real).st_mode)
        except OSError:
            return True

    # -- the check ---------------------------------------------------------------------------------

    def resolve(self, path: str, *, purpose: Purpose) -> Path:
        """The checked real path for `path`, or a ToolFailure saying why it is refused.

        - read/list/execute: the target must exist; symlinks are followed (inside the roots only).
        - write: the target may not exist yet (its nearest existing ancestor decides); an existing
          symlink is followed to its real target; dangling symlinks and hard-linked files are refused.
        - create: like write (a new entry: directory, move or copy destination).
        - delete: the target must exist; a symlink is returned as itself (the link is deleted, never its
          target); the roots and their ancestors are refused.
        """
        if purpose not in PURPOSES:
            raise ValueError(f"unknown purpose {purpose!r}")
        candidate = self._candidate(path)
        real = os.path.realpath(candidate)
        name, entry = self._entry(path, candidate, real)

        # Deny globs: the name the caller used and the real path behind it.
        if self.is_denied_name(name) or self.is_denied(real) or self.is_denied(entry):
            raise ToolFailure(
                ErrorCode.PERMISSION_DENIED,
                f"{_shown(path)!r} matches a protected pattern (secrets such as .env files and keys are never "
                "accessed by file tools); choose another file.",
            )

        entry_stat = _lstat(entry)
        is_link = entry_stat is not None and stat.S_ISLNK(entry_stat.st_mode)
        real_stat = self._real_stat(path, real)
        if purpose in ("write", "create", "delete"):
            self._check_changeable(path, entry, real)
        if purpose == "delete":
            return self._for_delete(path, entry, entry_stat, real, real_stat, is_link)
        if real_stat is None:
            return self._absent(path, purpose, real, is_link)
        self._check_existing(path, purpose, real_stat)
        return Path(real)

    def _candidate(self, path: str) -> str:
        """The path as given, made absolute against the first root (a `file://` URI and a leading `~` read first);
        refused when it is malformed or there are no roots."""
        text = self._validate_text(path)
        if not self._roots:
            raise ToolFailure(ErrorCode.PERMISSION_DENIED, self._no_roots_message)
        if text.startswith("file://"):
            text = _from_file_uri(text)
        text = os.path.expanduser(text) if text.startswith("~") else text
        return text if os.path.isabs(text) else os.path.join(self._roots[0], text)

    def _entry(self, path: str, candidate: str, real: str) -> tuple[str, str]:
        """The entry named by the caller (its real parent plus its own unresolved name) and that name; refused for
        the suite's own state and for anything whose real path or parent lies outside the roots."""
        if self._is_private(real) or self._is_private(os.path.abspath(candidate)):
            raise ToolFailure(
                ErrorCode.PERMISSION_DENIED,
                f"{_shown(path)!r} belongs to mcp-sections' own state (its data, cache or config: audit log, "
                "databases, settings), which tools never read or change, even inside a root. Use another path.",
            )
        if self._root_of(real) is None:
            raise self._outside(path)
        head, name = os.path.split(candidate.rstrip(os.sep) or os.sep)
        real_parent = os.path.realpath(head) if head else self._roots[0]
        if name in ("", ".", "..") or (real in self._roots and self._root_of(real_parent) is None):
            return name, real  # the path names a root itself (its parent lies outside the roots)
        if self._root_of(real_parent) is None:  # e.g. a symlink outside the roots pointing in
            raise self._outside(path)
        return name, os.path.join(real_parent, name)

    def _real_stat(self, path: str, real: str) -> os.stat_result | None:
        """The real path's lstat (None when nothing is there); refused for a link loop or a link that cannot be
        resolved."""
        try:
            real_stat: os.stat_result | None = os.lstat(real)
        except OSError as exc:
            real_stat = None
            looped = exc.errno == errno.ELOOP
        else:
            looped = real_stat is not None and stat.S_ISLNK(real_stat.st_mode)
        if looped:
            raise ToolFailure(
                ErrorCode.PERMISSION_DENIED,
                f"{_shown(path)!r} is a symbolic link loop (or a link that cannot be resolved); "
                "fix or remove the link.",
            )
        return real_stat

    def _check_changeable(self, path: str, entry: str, real: str) -> None:
        """For a write, create or delete: refused inside a .git directory, the trusted base, or on the way to them."""
        if _in_git_internals(entry) or _in_git_internals(real):
            raise ToolFailure(
                ErrorCode.PERMISSION_DENIED,
                f"{_shown(path)!r} is inside a repository's .git directory (config, hooks, alternates, objects): "
                "file tools never change it, since git runs what it says. Use git commands (shell_ops) instead.",
            )
        if any(is_inside(entry, place) or is_inside(real, place) for place in self._protected):
            part = self.base_part(real) or self.base_part(entry)
            what = part.what if part is not None else "the suite's installation"
            raise ToolFailure(
                ErrorCode.PERMISSION_DENIED,
                f"{_shown(path)!r} belongs to mcp-sections' trusted base ({what}): what the server runs from, runs, or "
                "is launched with, which tools may read but never change, since a change there would run unconfined "
                "next time. Change it outside the suite (or serve the project from another installation).",
            )
        if self._pinned and Path(entry) in self._pinned:
            raise ToolFailure(
                ErrorCode.PERMISSION_DENIED,
                f"{_shown(path)!r} leads to mcp-sections' own state or trusted base (its data, cache or config "
                "directory, or the interpreter it runs on, lies inside it or behind it), so tools never delete, move "
                "or replace it; work with the entries inside it instead.",
            )

    def _absent(self, path: str, purpose: Purpose, real: str, is_link: bool) -> Path:
        """Nothing is at the real path: not found for a read, list or execute, refused through a dangling link,
        else the path to write or create."""
        if purpose in ("read", "list", "execute"):
            raise ToolFailure(
                ErrorCode.NOT_FOUND,
                f"{_shown(path)!r} does not exist (looked for {self.relative(real)!r} under "
                f"{self._root_of(real)}); check the path, or list the directory first.",
            )
        if is_link:
            raise ToolFailure(
                ErrorCode.PERMISSION_DENIED,
                f"{_shown(path)!r} is a dangling symbolic link; writing through it is refused. "
                "Remove the link or write to a real path.",
            )
        return Path(real)

    def _check_existing(self, path: str, purpose: Purpose, real_stat: os.stat_result) -> None:
        """What exists at the real path: refused when special, or hard-linked and read, run or written."""
        if is_special_mode(real_stat.st_mode):
            raise ToolFailure(
                ErrorCode.PERMISSION_DENIED,
                f"{_shown(path)!r} is a special file (FIFO, socket or device); file tools only use regular "
                "files and directories.",
            )
        if purpose in ("read", "execute") and not self.readable_links(real_stat):
            raise ToolFailure(
                ErrorCode.PERMISSION_DENIED,
                f"{_shown(path)!r} has {real_stat.st_nlink} hard links: its other names may be protected files or "
                "lie outside the roots, so file tools do not read it (set [sections.file_ops] allow_hard_links = "
                "true to allow it, or make a copy outside the tools).",
            )
        if purpose == "write" and stat.S_ISREG(real_stat.st_mode) and real_stat.st_nlink > 1:
            raise ToolFailure(
                ErrorCode.PERMISSION_DENIED,
                f"{_shown(path)!r} has {real_stat.st_nlink} hard links; writing it would also change the other "
                "names (possibly outside the roots), so it is refused. Copy it to a new file and edit that.",
            )

    # -- TOCTOU-narrowing open helpers ---------------------------------------------------------------

    def open_file(self, path: Path | str, flags: int = os.O_RDONLY, mode: int = 0o600) -> int:
        """Open a checked path without following a final symlink; verify the descriptor's real path.

        Returns a file descriptor of a regular file inside the roots; raises ToolFailure otherwise.
        """
        text = os.fspath(path)
        try:
            fd = os.open(text, flags | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC | _O_BINARY, mode)
        except OSError as exc:
            raise self._os_failure(text, exc) from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
                raise ToolFailure(
                    ErrorCode.INVALID_INPUT if stat.S_ISDIR(info.st_mode) else ErrorCode.PERMISSION_DENIED,
                    f"{self.relative(text)!r} is {kind}.",
                )
            self._check_fd(fd, text)
            if _O_NONBLOCK:
                os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def open_directory(self, path: Path | str) -> int:
        """Open a checked directory (O_DIRECTORY | O_NOFOLLOW) and verify its real path is inside the roots."""
        text = os.fspath(path)
        if not _O_DIRECTORY:  # pragma: no cover - non-POSIX
            raise ToolFailure(ErrorCode.EXECUTION_FAILED, "directory descriptors are not supported here")
        try:
            fd = os.open(text, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC)
        except OSError as exc:
            raise self._os_failure(text, exc) from None
        try:
            self._check_fd(fd, text)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def descriptor_inside(self, fd: int) -> bool:
        """Whether an open descriptor's real path lies inside the roots (True where this cannot be checked)."""
        try:
            self._check_fd(fd, "")
        except ToolFailure:
            return False
        return True

    # -- internals ---------------------------------------------------------------------------------

    def _is_private(self, real: str) -> bool:
        return any(is_inside(real, private) for private in self._private)

    def _root_of(self, real: str) -> str | None:
        if self._private and self._is_private(real):
            return None
        for root in self._roots:
            if is_inside(real, root):
                return root
        return None

    def _denied_relative(self, rel: str) -> bool:
        if not self._deny_globs:
            return False
        parts = [part for part in rel.replace(os.sep, "/").split("/") if part not in ("", ".")]
        lowered = [part.lower() for part in parts]
        if self._name_regex is not None and any(self._name_regex.match(part) for part in lowered):
            return True
        joined = "/".join(lowered)
        return any(fnmatch.fnmatchcase(joined, glob) for glob in self._path_globs)

    def _validate_text(self, path: str) -> str:
        if not isinstance(path, str):
            raise ToolFailure(ErrorCode.INVALID_INPUT, "a path must be a string.")
        if "\x00" in path:
            raise ToolFailure(ErrorCode.INVALID_INPUT, "the path contains a NUL byte, which no file name may hold.")
        if not path.strip():
            raise ToolFailure(ErrorCode.INVALID_INPUT, "the path is empty; give a file or directory path.")
        if len(path) > MAX_PATH_LENGTH:
            raise ToolFailure(
                ErrorCode.INVALID_INPUT, f"the path is {len(path)} characters long; the limit is {MAX_PATH_LENGTH}."
            )
        if any(len(part.encode("utf-8", "surrogatepass")) > MAX_COMPONENT_LENGTH for part in path.split("/")):
            raise ToolFailure(
                ErrorCode.INVALID_INPUT,
                f"a component of the path is longer than {MAX_COMPONENT_LENGTH} bytes; no file name can be that long.",
            )
        return path

    def _outside(self, path: str) -> ToolFailure:
        roots = ", ".join(self._roots)
        return ToolFailure(
            ErrorCode.PERMISSION_DENIED,
            f"{_shown(path)!r} is outside the allowed roots ({roots}); symbolic links leading out of them are "
            "refused too. Use a path inside a root (relative paths start at the first root"
            + (f"; {self._roots_tool} lists them)." if self._roots_tool else ")."),
        )

    def _for_delete(
        self,
        path: str,
        entry: str,
        entry_stat: os.stat_result | None,
        real: str,
        real_stat: os.stat_result | None,
        is_link: bool,
    ) -> Path:
        if entry_stat is None:
            raise ToolFailure(
                ErrorCode.NOT_FOUND, f"{_shown(path)!r} does not exist; nothing to delete (list the directory first)."
            )
        target = entry if is_link else real
        if any(is_inside(root, target) for root in self._roots):
            raise ToolFailure(
                ErrorCode.PERMISSION_DENIED,
                f"{_shown(path)!r} is an allowed root (or contains one); roots are never deleted. "
                "Delete the entries inside it instead.",
            )
        if not is_link and real_stat is not None and is_special_mode(real_stat.st_mode):
            raise ToolFailure(
                ErrorCode.PERMISSION_DENIED, f"{_shown(path)!r} is a special file (FIFO, socket or device)."
            )
        return Path(target)

    def _check_fd(self, fd: int, text: str) -> None:
        if not sys.platform.startswith("linux"):
            return
        try:
            opened = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return
        if self._root_of(opened) is None:
            raise ToolFailure(
                ErrorCode.PERMISSION_DENIED,
                f"{self.relative(text)!r} changed while it was being opened and now leads outside the allowed "
                "roots; refused.",
            )

    def _os_failure(self, text: str, exc: OSError) -> ToolFailure:
        shown = self.relative(text)
        if exc.errno == errno.ENOENT:
            return ToolFailure(ErrorCode.NOT_FOUND, f"{shown!r} does not exist (it may have just been removed).")
        if exc.errno in (errno.ELOOP, errno.EMLINK) or (exc.errno == errno.ENOTDIR and os.path.islink(text)):
            return ToolFailure(
                ErrorCode.PERMISSION_DENIED, f"{shown!r} is a symbolic link; it is not followed at this point."
            )
        if exc.errno == errno.ENOTDIR:
            return ToolFailure(ErrorCode.INVALID_INPUT, f"{shown!r} is not a directory.")
        if exc.errno == errno.EISDIR:
            return ToolFailure(ErrorCode.INVALID_INPUT, f"{shown!r} is a directory, not a file.")
        if exc.errno in (errno.EACCES, errno.EPERM):
            return ToolFailure(ErrorCode.PERMISSION_DENIED, f"the operating system refused access to {shown!r}.")
        return ToolFailure(ErrorCode.EXECUTION_FAILED, f"{shown!r} could not be opened ({exc.strerror}).")


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (OSError, ValueError):
        return None


def _from_file_uri(uri: str) -> str:
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    if parsed.netloc not in ("", "localhost"):
        raise ToolFailure(ErrorCode.INVALID_INPUT, "only local file:// URIs are accepted.")
    text = unquote(parsed.path)
    if "\x00" in text:
        raise ToolFailure(ErrorCode.INVALID_INPUT, "the path contains a NUL byte, which no file name may hold.")
    return text


def roots_from_uris(uris: Iterable[str]) -> list[Path]:
    """Local directories named by `file://` URIs (MCP client roots); anything else is skipped."""
    paths: list[Path] = []
    for uri in uris:
        with contextlib.suppress(ToolFailure, ValueError):
            if uri.startswith("file://"):
                text = _from_file_uri(uri)
                if text and os.path.isabs(text):
                    paths.append(Path(text))
    return paths


def intersect_roots(configured: Sequence[Path], client: Sequence[Path]) -> list[Path]:
    """The roots in force when a client offers MCP roots: a client can narrow access, never widen it.

    - no configured roots: the client's roots are used as they are;
    - otherwise: each client root that lies inside a configured root, plus each configured root that
      lies inside a client root (real paths; the narrower of two nested roots wins). Client roots that
      overlap no configured root are ignored; if nothing overlaps the result is empty (every path is
      then refused, with a message naming both sets of roots).
    """
    client_real = [os.path.realpath(os.fspath(path)) for path in client]
    if not configured:
        return [Path(path) for path in dict.fromkeys(client_real)]
    configured_real = [os.path.realpath(os.fspath(path)) for path in configured]
    result: list[str] = []
    for path in client_real:
        if any(is_inside(path, root) for root in configured_real) and path not in result:
            result.append(path)
    for root in configured_real:
        if any(is_inside(root, path) for path in client_real) and root not in result:
            result.append(root)
    return [Path(path) for path in result]


def _in_git_internals(path: str) -> bool:
    """Whether `path` is a `.git` entry or lies inside one (a repository's config, hooks, alternates...)."""
    return ".git" in Path(path).parts
