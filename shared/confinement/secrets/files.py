"""The deny-listed files inside the roots, found ahead of time: hidden from sandboxed programs, and their values
taught to the masker.

The path guard refuses a `.env`, a key or `~/.ssh` by name (`DEFAULT_DENY_GLOBS`, the one deny-list), but a
program inside the sandbox opens files itself: `grep -r`, `jq`, a script's `open()`. So every deny-listed file and
directory inside the roots is hidden from it (shared/confinement/sandbox.py: /dev/null over a file, an empty tmpfs over
a directory, as Claude Code's sandbox `denyRead` does): reading one fails, listing one finds it empty. The server
itself (trusted) reads those files and teaches every value they hold (`file_values`) to the masker
(shared/confinement/secrets/values.py, in the pool of sources that program output never evicts), so a copy elsewhere is
masked in every output, re-encoded too. Hiding is the guarantee; masking by value is best effort.

Nothing a program writes decides what is secret. Programs write anywhere in the roots, so no name or marker they can
create (`node_modules`, `.git`, `site-packages`, `pyvenv.cfg`, `CACHEDIR.TAG`, `lib/python3.11`) makes the walk
skip a directory: it lists every directory of the roots (never following a symbolic link: a deny-listed link is
resolved, and its target hidden when it lies inside the roots), less the suite's own state (hidden anyway). What
is left visible is decided by a file's *content*, which a program cannot forge without knowing it:
- public content: a file holding nothing but certificates, public keys or parameters (a CA bundle such as a
  virtual environment's `cacert.pem`: hiding it would break TLS there), OpenSSH public keys, or nothing at all;
- content committed as it is in its repository, with the repository's objects inside the roots (a `.env.example`,
  a test key): every program can read it from the objects anyway, and git inside the sandbox cannot hash a hidden
  file (`git diff` and `git commit -a` would fail). Its values are still learnt; a committed `.env` with local
  changes is hidden;
- content installed as it is by pip: its SHA-256 is the one the `RECORD` of its distribution lists (in the
  `site-packages` holding it), as for a package's test key or bundled certificate.
A program that forges any of these can only make visible a file whose content it wrote or could already read.
Everything else with a deny-listed name is hidden, in `.git` (which holds none: its objects are named by hash) and in
installed software alike. A protected file that has other hard links is hidden under each name found. Each hidden
path costs the sandbox about 0.6 ms per command, so the keys of a Python installation's test suite (`lib/pythonX.Y/
test`, ~15 in each pyenv version) are hidden as that one directory: a name may make the sandbox hide more, never less.

Cost and window. The first command waits for the walk (at most MAX_ENTRIES entries and MAX_SECONDS; whatever is
left is walked in the background, and a warning logged): a home directory of 130,000 entries in 12,000 directories
(nine pyenv Pythons) takes ~0.5 s of CPU. Afterwards the walk is re-checked, not redone: every directory seen is
stat'ed, and only those whose modification time changed are listed again (a new file, a rename, a moved directory
all change it). The ordinary directories of a tree of at most SYNC_DIRECTORIES of them (a project) are re-checked
before every command: no window there. Trees of installed software and caches (`.git`, `node_modules`,
`site-packages`, virtual environments, `lib/pythonX.Y`, `CACHEDIR.TAG` directories: here a name decides only how
soon, never whether) and larger roots (a home directory) are re-checked by a background thread every
REFRESH_SECONDS (or 20 times as long as a check takes, so that it never uses more than 5% of a core: 12,000
directories take ~35 ms); before each command only the known protected paths are looked at (one lstat each), and
one that vanished or changed — a program renamed the directory holding it (a hidden file itself cannot be moved,
unlinked or hard-linked inside the sandbox) — makes that command wait for a full re-check, wherever it went.

The window: a deny-listed file created outside the suite in a background-checked tree is visible to programs
started before the next background re-check (REFRESH_SECONDS or more); a program that keeps running sees files
created after it started; and of two commands running at once, one that renames a directory while the other's
sandbox is being set up can show that one sandbox a file under its new name.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import re
import stat
import struct
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.confinement.secrets import values as secret_values
from mcp_sections.shared.confinement.secrets.masking import key_body, secret_values_in
from mcp_sections.shared.ground.errors import limit_exceeded
from mcp_sections.shared.ground.locations import is_inside

logger = logging.getLogger("mcp_sections.secret_files")

MAX_ENTRIES = 500_000
MAX_SECONDS = 10.0
BACKGROUND_ENTRIES = 50_000  # walked per background round while the first walk is unfinished
REFRESH_SECONDS = 2.0
SYNC_DIRECTORIES = 500
MAX_READ = 256 * 1024  # bytes of one protected file read for its values
MAX_HASHED = 16 * 1024 * 1024  # a larger protected file is hidden without asking whether it is committed
MAX_FILES_READ = 64  # files read inside one protected directory (~/.ssh, ~/.aws)
MANY = 64  # protected paths past which a warning says what they cost
MAX_WATCHED = 4  # sets of roots kept fresh at once (file_ops' roots can change with the client's)
RACY_NS = 2_000_000_000  # a directory changed this recently is listed again next time (coarse timestamps)
MAX_PUBLIC = 4 * 1024 * 1024  # a larger file is never taken for public content (CA bundles are ~300 KB)
#: Trees of installed software and caches: re-checked in the background only (when, never whether; see above).
BULK_NAMES = frozenset({".git", ".hg", ".svn", "node_modules", "site-packages", "dist-packages", "__pycache__"})
BULK_MARKERS = frozenset({"pyvenv.cfg", "CACHEDIR.TAG"})
_PYTHON_LIBRARY = re.compile(r"python\d+(?:\.\d+)?t?")
_PUBLIC_BLOCK = re.compile(
    r"-----BEGIN ((?:X509 |TRUSTED )?CERTIFICATE|X509 CRL|(?:RSA |EC )?PUBLIC KEY|(?:NEW )?CERTIFICATE REQUEST|"
    r"(?:DH|EC|DSA) PARAMETERS|PKCS7|CMS)-----\r?\n[A-Za-z0-9+/=\r\n]*-----END \1-----"
)
_SSH_PUBLIC_KEY = re.compile(r"(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp\d+|sk-\S+@openssh\.com) AAAA[A-Za-z0-9+/=]+")
_ASSIGNMENT_LINE = re.compile(r"\s*[\w.\-]+\s*[=:]")
_HEX_BYTES = re.compile(r"(?:[0-9a-fA-F]{2}:)+[0-9a-fA-F]{0,2}")
_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----.*?(?:-----END \1-----|\Z)", re.DOTALL)

Identity = tuple[int, int, int, int, int, int]


class _Snapshot(NamedTuple):
    paths: tuple[Path, ...]
    identities: tuple[tuple[str, Identity | None], ...]


def _identity(path: str) -> Identity | None:
    """What changes when a path is replaced, moved, edited or gains a hard link (None: it is gone)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, stat.S_IFMT(info.st_mode), info.st_nlink, info.st_mtime_ns, info.st_size)


class SecretFiles:
    """The deny-listed entries inside one guard's roots, kept fresh (see the module docstring). Thread-safe."""

    def __init__(self, guard: PathGuard) -> None:
        roots = [str(root) for root in guard.roots]
        self._roots = tuple(
            root for root in roots if not any(root != other and is_inside(root, other) for other in roots)
        )
        self._all_roots = tuple(roots)
        self._skip = frozenset(str(path) for path in guard.private_inside_roots())
        self._guard = guard
        self._path_globs = any("/" in glob for glob in guard.deny_globs)
        self._lock = threading.Lock()
        self._directories: dict[str, int] = {}  # listed directory -> its mtime then (-1: list it again)
        self._bulk: set[str] = set()  # listed directories inside installed software and caches (see BULK_NAMES)
        self._found: dict[str, tuple[str, ...]] = {}  # directory -> the protected paths listed in it
        self._pending: deque[str] = deque()  # directories not walked yet (the first walk was cut short)
        self._linked: frozenset[tuple[int, int]] = frozenset()  # (dev, inode) of protected files with other names
        self._read: dict[str, Identity | None] = {}  # files whose values were learnt -> their identity then
        self._snapshot: _Snapshot | None = None
        self._kinds: dict[str, tuple[Identity | None, str]] = {}  # found path -> (identity, what its content is)
        self._records: dict[str, tuple[int, dict[str, str]]] = {}  # site-packages -> (mtime, path -> sha256)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._warned = False

    def paths(self) -> tuple[Path, ...]:
        """The protected files and directories now: the first call walks, later ones re-check (see above)."""
        snapshot = self._snapshot
        moved = snapshot is not None and not _unchanged(snapshot)
        if snapshot is None or moved or len(self._directories) - len(self._bulk) <= SYNC_DIRECTORIES:
            with self._lock:
                if self._snapshot is None:
                    self._walk_first()
                else:  # a small tree whole; else its ordinary directories, or all when a protected path moved
                    small = len(self._directories) <= SYNC_DIRECTORIES
                    self._check(everything=small or not _unchanged(self._snapshot))
                snapshot = self._snapshot
                assert snapshot is not None
            if (len(self._directories) > SYNC_DIRECTORIES or self._pending) and self._thread is None:
                self._thread = threading.Thread(target=self._refresh, name="secret-files", daemon=True)
                self._thread.start()
        return snapshot.paths

    def close(self) -> None:
        """Stop the background re-checks."""
        self._stop.set()

    # -- walking --------------------------------------------------------------------------------------

    def _walk_first(self) -> None:
        started = time.monotonic()
        self._walk(deque(self._roots), MAX_ENTRIES, started + MAX_SECONDS)
        if self._pending:
            logger.warning(
                "the walk for protected files (.env, keys, ...) in %s stopped after %.1f s and %d directories; "
                "%d directories are walked in the background, and files there are visible to programs until then",
                ", ".join(self._roots),
                time.monotonic() - started,
                len(self._directories),
                len(self._pending),
            )
        self._publish()

    def _walk(self, queue: deque[str], max_entries: int, deadline: float) -> None:
        """Walk breadth-first from the directories queued, within the budgets (the rest is left pending)."""
        entries = 0
        while queue and entries < max_entries and time.monotonic() < deadline:
            directory = queue.popleft()
            if directory not in self._directories:
                count, subdirectories = self._visit(directory)
                entries += count
                queue.extend(subdirectories)
        if queue is not self._pending:
            self._pending.extend(queue)

    def _visit(self, directory: str) -> tuple[int, list[str]]:
        """List one directory: record what it holds that is protected; its entry count and subdirectories (all of
        them: no name a program can give a directory leaves it out)."""
        try:
            info = os.lstat(directory)
            listing = list(os.scandir(directory))
        except OSError:
            self._forget(directory)
            return 0, []
        racy = time.time_ns() - info.st_mtime_ns < RACY_NS
        self._directories[directory] = -1 if racy else info.st_mtime_ns
        bulk = directory in self._bulk or any(entry.name in BULK_MARKERS for entry in listing)
        if bulk:
            self._bulk.add(directory)
        in_lib = os.path.basename(directory) in ("lib", "lib64")
        denied_name, path_globs, skip, known_bulk = self._guard.is_denied_name, self._path_globs, self._skip, self._bulk
        found: list[str] = []
        subdirectories: list[str] = []
        for entry in listing:
            name = entry.name
            if denied_name(name) or (path_globs and self._guard.is_denied(entry.path)):
                found += self._protected(entry)
            elif entry.is_dir(follow_symlinks=False):
                path = entry.path
                if path not in skip:
                    subdirectories.append(path)
                    if bulk or name in BULK_NAMES or (in_lib and _PYTHON_LIBRARY.fullmatch(name)):
                        known_bulk.add(path)
                    else:
                        known_bulk.discard(path)
            elif self._linked and self._links_to_protected(entry):
                found.append(entry.path)
        if found:
            self._found[directory] = tuple(found)
        else:
            self._found.pop(directory, None)
        return len(listing), subdirectories

    def _links_to_protected(self, entry: os.DirEntry[str]) -> bool:
        """Whether a regular file is a hard link to a protected file (same device and inode)."""
        try:
            if not entry.is_file(follow_symlinks=False):
                return False
            with_links = entry.stat(follow_symlinks=False)
        except OSError:  # gone since the listing (a file removed, a /proc entry): nothing to hide
            return False
        return (with_links.st_dev, with_links.st_ino) in self._linked

    def _protected(self, entry: os.DirEntry[str]) -> list[str]:
        """What to hide for a deny-listed entry: itself, or the target of a link when it lies inside the roots."""
        if not entry.is_symlink():
            return [entry.path]
        target = os.path.realpath(entry.path)
        inside = any(is_inside(target, root) for root in self._all_roots) and target not in self._skip
        return [target] if inside and os.path.exists(target) else []

    def _forget(self, directory: str) -> None:
        """A directory that is gone: forget it and everything under it."""
        prefix = directory.rstrip("/") + "/"
        for known in [known for known in self._directories if known == directory or known.startswith(prefix)]:
            del self._directories[known]
            self._bulk.discard(known)
            self._found.pop(known, None)

    # -- keeping fresh ----------------------------------------------------------------------------------

    def _check(self, *, everything: bool = True, background: bool = False) -> None:
        """List again the directories that changed (all, or the ordinary ones only: see the module docstring), walk
        the new ones, learn the values of changed files."""
        new: deque[str] = deque()
        changed = False
        for directory, seen in list(self._directories.items()):
            if not everything and directory in self._bulk:
                continue
            try:
                info = os.lstat(directory)
            except OSError:
                info = None
            if info is None or not stat.S_ISDIR(info.st_mode):
                if directory in self._directories:  # not yet forgotten with an ancestor
                    self._forget(directory)
                    changed = True
            elif seen == -1 or info.st_mtime_ns != seen:
                new.extend(path for path in self._visit(directory)[1] if path not in self._directories)
                changed = True
        self._walk(new, MAX_ENTRIES, time.monotonic() + MAX_SECONDS)
        if background and self._pending:
            self._walk(self._pending, BACKGROUND_ENTRIES, time.monotonic() + MAX_SECONDS)
            changed = True
            if not self._pending:
                logger.info("the walk for protected files in %s is complete", ", ".join(self._roots))
        snapshot = self._snapshot
        if changed or snapshot is None or not _unchanged(snapshot):
            self._publish()

    def _refresh(self) -> None:
        """Re-check every REFRESH_SECONDS, or less often when a check takes long (at most 5% of a core)."""
        pause = REFRESH_SECONDS
        while not self._stop.wait(pause):
            started = time.monotonic()
            try:
                with self._lock:
                    self._check(background=True)
            except Exception:  # a background thread must not die of one bad directory
                logger.exception("re-checking the protected files failed")
            pause = max(REFRESH_SECONDS, 20 * (time.monotonic() - started))

    def _publish(self) -> None:
        """Make the found paths the current snapshot (less those whose content is public, committed or installed as
        it is), learn the values of new or changed protected files, and look for the other names of hard-linked ones
        (one more pass)."""
        found = sorted({path for found in self._found.values() for path in found})
        identities = tuple((path, _identity(path)) for path in found)
        kinds = {path: self._kind(path, identity) for path, identity in identities}
        self._kinds = {path: known for path, known in self._kinds.items() if path in kinds}  # found now only
        self._learn([path for path in found if kinds[path] in ("secret", "committed")])
        linked = frozenset(
            (info[0], info[1]) for _, info in identities if info and info[3] > 1 and stat.S_ISREG(info[2])
        )
        if linked - self._linked:
            self._linked = linked
            for directory in self._directories:
                self._directories[directory] = -1
            self._check()
            return
        paths = _grouped([path for path in found if kinds[path] == "secret"], self._all_roots)
        self._snapshot = _Snapshot(tuple(Path(path) for path in paths), identities)
        if len(paths) > MANY and not self._warned:
            self._warned = True
            logger.warning(
                "%d protected files and directories in %s are hidden from programs; each costs the sandbox about "
                "0.6 ms per command",
                len(paths),
                ", ".join(self._roots),
            )

    def _kind(self, path: str, identity: Identity | None) -> str:
        """What a found path's content is (cached by identity): "public", "committed" or "installed" as it is, or
        "secret" (a directory, or anything else)."""
        if identity is None or not stat.S_ISREG(identity[2]):
            return "secret"
        known = self._kinds.get(path)
        if known is None or known[0] != identity:
            if _public(path):
                kind = "public"
            elif _in_repository(path, self._all_roots):
                kind = "committed"
            elif self._installed(path):
                kind = "installed"
            else:
                kind = "secret"
            known = self._kinds[path] = (identity, kind)
        return known[1]

    def _installed(self, path: str) -> bool:
        """Whether pip installed `path` as it is: the RECORD of a distribution in the `site-packages` (or
        `dist-packages`) holding it lists the file with this SHA-256 (which only its content gives)."""
        site = path
        while os.path.basename(site) not in ("site-packages", "dist-packages"):
            parent = os.path.dirname(site)
            if parent == site or not any(is_inside(parent, root) for root in self._all_roots):
                return False
            site = parent
        try:
            mtime = os.stat(site).st_mtime_ns
        except OSError:
            return False
        cached = self._records.get(site)
        if cached is None or cached[0] != mtime:
            cached = self._records[site] = (mtime, _records(site))
        listed = cached[1].get(os.path.relpath(path, site))
        return listed is not None and listed == _sha256(path)

    def _learn(self, paths: Sequence[str]) -> None:
        """Teach the masker the values of the protected files (each its own source: kept while it holds them), and
        make it forget those of files no longer protected."""
        current: set[str] = set()
        for path in paths:
            for file in _files_of(path):
                current.add(file)
                identity = _identity(file)
                if self._read.get(file, False) != identity or not secret_values.KNOWN.knows_source(file):
                    self._read[file] = identity
                    secret_values.KNOWN.learn_source(file, file_values(os.path.basename(file), _read_text(file)))
        gone = [file for file in self._read if file not in current]
        for file in gone:
            del self._read[file]
            secret_values.KNOWN.forget_source(file)
        if gone:  # room freed: sources left out for lack of it are taken again
            for file in secret_values.KNOWN.refused():
                if file in self._read:
                    secret_values.KNOWN.learn_source(file, file_values(os.path.basename(file), _read_text(file)))


def _in_repository(path: str, roots: Sequence[str]) -> bool:
    """Whether the content of `path` is stored as a blob in the objects of the git repository holding it, when
    those objects lie inside the roots: then every program can read it there anyway, and hiding the work-tree
    copy would only break git (`git diff` and `git commit -a` cannot hash a hidden file). A committed template
    (`.env.example`) or test key stays visible; a committed `.env` with local changes is hidden."""
    objects = _objects_of(os.path.dirname(path), roots)
    if objects is None:
        return False
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_HASHED + 1)
    except OSError:
        return False
    if len(data) > MAX_HASHED:
        return False
    name = hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
    if os.path.isfile(os.path.join(objects, name[:2], name[2:])):
        return True
    packs = os.path.join(objects, "pack")
    try:
        indexes = [entry.path for entry in os.scandir(packs) if entry.name.endswith(".idx")]
    except OSError:
        return False
    return any(_in_pack_index(index, bytes.fromhex(name)) for index in indexes)


def _objects_of(directory: str, roots: Sequence[str]) -> str | None:
    """The object directory of the repository whose work tree holds `directory`, if it lies inside the roots
    (a `.git` directory, or a `.git` file pointing at one, as worktrees and submodules have)."""
    while any(is_inside(directory, root) for root in roots):
        dot_git = os.path.join(directory, ".git")
        if os.path.isfile(dot_git):
            try:
                with open(dot_git, encoding="utf-8") as file:
                    pointer = file.read(4096).strip()
            except (OSError, UnicodeDecodeError):
                return None
            if not pointer.startswith("gitdir:"):
                return None
            dot_git = os.path.realpath(os.path.join(directory, pointer.removeprefix("gitdir:").strip()))
        if os.path.isdir(dot_git):
            common = os.path.join(dot_git, "commondir")
            if os.path.isfile(common):
                with open(common, encoding="utf-8", errors="replace") as file:
                    dot_git = os.path.realpath(os.path.join(dot_git, file.read(4096).strip()))
            objects = os.path.realpath(os.path.join(dot_git, "objects"))
            return objects if any(is_inside(objects, root) for root in roots) else None
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return None


def _in_pack_index(index: str, name: bytes) -> bool:
    """Whether a version-2 pack index lists the object `name` (a binary search of its sorted names)."""
    try:
        with open(index, "rb") as file:
            header = file.read(8 + 256 * 4)
            if len(header) < 8 + 256 * 4 or header[:8] != b"\xfftOc\x00\x00\x00\x02":
                return False
            fanout = struct.unpack(">256I", header[8:])
            low, high = (fanout[name[0] - 1] if name[0] else 0), fanout[name[0]]
            while low < high:
                middle = (low + high) // 2
                file.seek(8 + 256 * 4 + 20 * middle)
                found = file.read(20)
                if found == name:
                    return True
                if found < name:
                    low = middle + 1
                else:
                    high = middle
    except OSError:
        return False
    return False


def _unchanged(snapshot: _Snapshot) -> bool:
    return all(_identity(path) == identity for path, identity in snapshot.identities)


def _python_library(directory: str, name: str) -> bool:
    """`lib/python3.11` of a Python installation."""
    return os.path.basename(directory) in ("lib", "lib64") and _PYTHON_LIBRARY.fullmatch(name) is not None


def _grouped(paths: list[str], roots: Sequence[str]) -> list[str]:
    """The paths to hide: the protected ones, less those inside a Python installation's test package
    (`lib/pythonX.Y/test`, ~15 keys and certificates a version), which is hidden as one directory instead: every
    hidden path costs the sandbox ~0.6 ms per command. A name here makes the sandbox hide more, never less."""
    hidden: dict[str, None] = {}
    for path in paths:
        parts = path.split(os.sep)
        for at in range(len(parts) - 3):
            if parts[at + 2] == "test" and _python_library(parts[at], parts[at + 1]):
                package = os.sep.join(parts[: at + 3])
                if not any(is_inside(root, package) for root in roots):
                    path = package
                break
        hidden[path] = None
    return list(hidden)


def _public(path: str) -> bool:
    """Whether a file holds only what is public, whoever wrote it: PEM certificates, public keys or parameters
    (with comments and titles between them, as CA bundles have), OpenSSH public keys, or nothing at all."""
    data = _read_bytes(path, MAX_PUBLIC)
    if data is None:
        return False
    text = data.decode("utf-8", errors="replace")
    rest, blocks = _PUBLIC_BLOCK.subn("", text)
    lines = [line for line in rest.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if blocks:
        return not any("-----" in line or _ASSIGNMENT_LINE.match(line) for line in lines)
    return all(_SSH_PUBLIC_KEY.match(line.strip()) for line in lines)


def _records(site: str) -> dict[str, str]:
    """What the RECORDs of the distributions in a `site-packages` list (`*.dist-info/RECORD`): path inside it ->
    urlsafe-base64 SHA-256."""
    listed: dict[str, str] = {}
    try:
        records = [
            os.path.join(entry.path, "RECORD") for entry in os.scandir(site) if entry.name.endswith(".dist-info")
        ]
    except OSError:
        return listed
    for record in records:
        data = _read_bytes(record, MAX_HASHED)
        for line in (data or b"").decode("utf-8", errors="replace").splitlines():
            name, _, rest = line.rpartition(",")[0].rpartition(",")
            if rest.startswith("sha256="):
                listed[os.path.normpath(name)] = rest.removeprefix("sha256=")
    return listed


def _sha256(path: str) -> str | None:
    """A file's SHA-256 as a RECORD writes it (urlsafe base64, no padding)."""
    data = _read_bytes(path, MAX_HASHED)
    if data is None:
        return None
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def _read_bytes(path: str, limit: int) -> bytes | None:
    """A regular file's content (None when it is not one, unreadable, or larger than `limit`)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        with os.fdopen(descriptor, "rb", closefd=False) as file:
            data = file.read(limit + 1)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    return data if len(data) <= limit else None


def _files_of(path: str) -> Iterator[str]:
    """A protected file itself, or the regular files inside a protected directory (MAX_FILES_READ, 3 levels)."""
    if not os.path.isdir(path) or os.path.islink(path):
        yield path
        return
    count = 0
    stack = [(path, 0)]
    while stack:
        directory, depth = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.is_file(follow_symlinks=False):
                yield entry.path
                count += 1
                if count >= MAX_FILES_READ:
                    return
            elif entry.is_dir(follow_symlinks=False) and depth < 2:
                stack.append((entry.path, depth + 1))


def _read_text(path: str) -> str:
    """The start of a regular file as text ("" for anything else, a binary file, or an error)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return ""
        data = os.read(descriptor, MAX_READ)
    except OSError:
        return ""
    finally:
        os.close(descriptor)
    return "" if b"\0" in data[:8192] else data.decode("utf-8", errors="replace")


def file_values(name: str, text: str) -> list[str]:
    """The values of a deny-listed file worth remembering, whatever they are named: the bodies of its private keys,
    what the detectors find (tokens, passwords in URLs), every value it assigns (`NAME=value`, `name = value`,
    `name: value`: `.env`, `.aws/credentials`, `.npmrc`, `.pypirc`, YAML), the words of its other lines (`.netrc`,
    a bare token), the last field of `.pgpass` and `.htpasswd` lines, and every string of a JSON file. Plain
    addresses and absolute paths are left out; so are words and short values (`secret_values.worth_remembering`)."""
    lowered = name.lower()
    if lowered.endswith(".json"):
        try:
            document = json.loads(text)
        except ValueError:
            pass
        else:
            return _kept([value for string in _json_strings(document) for value in _string_values(string)])
    values = _key_bodies(text)
    rest = _PEM_BLOCK.sub("\n", text)  # certificates are public; the key bodies are taken whole above
    values += secret_values_in(rest)
    lines = [line.strip() for line in rest.splitlines() if line.strip() and line.lstrip()[0] not in "#;"]
    for line in lines:
        values += _line_values(line)
    if lowered == ".pgpass" or lowered == ".htpasswd":
        values += [line.rsplit(":", 1)[1] for line in lines if ":" in line]
    return _kept(values)


def _kept(values: list[str]) -> list[str]:
    """The values worth remembering, once each, less plain addresses and absolute paths."""
    return [
        value
        for value in dict.fromkeys(values)
        if secret_values.worth_remembering(value) and not secret_values.plain(value)
    ]


def _line_values(line: str) -> list[str]:
    """What one line of a protected file holds: the value it assigns (after its first `=`, or else its first `:`),
    unquoted and without a trailing comment, with its words; or else its words."""
    if _HEX_BYTES.fullmatch(line):  # a certificate's modulus or signature in a text dump: public
        return []
    separator = "=" if "=" in line else ":" if ":" in line else None
    if separator is None:
        return line.split()
    value = line.split(separator, 1)[1].strip()
    if value[:1] in ('"', "'", "`"):
        closing = value.find(value[0], 1)
        value = value[1:closing] if closing > 0 else value[1:]
    else:
        value = value.split(" #", 1)[0].rstrip(" ,;")
    words = value.split()
    return [value, *words] if len(words) > 1 else [value]


def _json_strings(document: Any) -> Iterator[str]:
    if isinstance(document, dict):
        for value in document.values():
            yield from _json_strings(value)
    elif isinstance(document, list):
        for item in document:
            yield from _json_strings(item)
    elif isinstance(document, str):
        yield document


def _string_values(string: str) -> list[str]:
    """The values of one JSON string: a key block as its body, else the string itself and what detectors find in it."""
    if "-----BEGIN" in string:
        return _key_bodies(string)
    return [string, *secret_values_in(string)]


def _key_bodies(text: str) -> list[str]:
    """The bodies of the private key blocks in `text`."""
    return [key_body(block.group()) for block in _PEM_BLOCK.finditer(text) if "PRIVATE KEY" in block.group(1)]


_WATCHED: OrderedDict[tuple[Any, ...], SecretFiles] = OrderedDict()
_WATCHED_LOCK = threading.Lock()


def protected_paths(guard: PathGuard) -> tuple[Path, ...]:
    """The deny-listed files and directories inside the guard's roots (walked at the first call for a set of
    roots, kept fresh after that)."""
    if not guard.roots:
        return ()
    key = (guard.roots, guard.private_inside_roots(), guard.deny_globs)
    with _WATCHED_LOCK:
        files = _WATCHED.get(key)
        if files is None:
            files = _WATCHED[key] = SecretFiles(guard)
            while len(_WATCHED) > MAX_WATCHED:
                _WATCHED.popitem(last=False)[1].close()
        else:
            _WATCHED.move_to_end(key)
    return files.paths()


def hidden_from_programs(guard: PathGuard, within: Sequence[Path] | None = None) -> tuple[Path, ...]:
    """What a sandboxed program must not see: the suite's own state inside the roots, and every deny-listed
    file and directory inside `within` (the directories the program is shown; default: the roots)."""
    places = [str(place) for place in (guard.roots if within is None else within)]
    protected = [path for path in protected_paths(guard) if any(is_inside(str(path), place) for place in places)]
    refused = secret_values.KNOWN.refused()
    if refused:  # the masker's pool of file values is full: fail closed
        largest = sorted(refused, key=lambda source: -refused[source])[:3]
        raise limit_exceeded(
            f"the protected files in the roots hold more secret values than the masker keeps "
            f"({secret_values.MAX_SOURCE_CHARS:,} characters; {len(refused)} file(s) left out, the largest: "
            f"{', '.join(largest)}), so a program could print a copy of a value it does not know: no program is "
            "started until they fit. Move the keys and .env files that are not needed out of the roots (or delete "
            "files a program wrote there), or serve a narrower root."
        )
    return (*guard.private_inside_roots(), *protected)
