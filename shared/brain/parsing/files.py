"""Which files the brain reads: languages by extension, what is skipped (vendored and build directories,
binaries, lock and minified files, secrets) and the filtered walk over a project (`walk_tree`)."""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_sections.shared.confinement.guards.paths import SECRET_FILE_GLOBS
from mcp_sections.shared.text.gitignore import rules_down_to
from mcp_sections.shared.text.walking import WalkStats as WalkerStats
from mcp_sections.shared.text.walking import walk

MAX_FILE_BYTES = 1_000_000
MAX_SCOPE_CHARS = 20_000
MAX_EMBED_CHARS = 240
"""Embedded texts are short (~60 tokens): MiniLM runs ~70 texts/s at this length on 2 CPU cores, ~30/s at 500
characters. Names, signatures and the first docstring paragraph carry the meaning; bodies stay text-searchable."""
TRIVIAL_LINES = 3
CHUNK_CHARS = 1_500
MAX_CODE_BLOCK_CHARS = 6_000  # a fenced code block up to this length stays whole in one chunk
MAX_CHUNKS_PER_FILE = 200
MAX_SCOPES_PER_FILE = 2_000
MAX_REFS_PER_SCOPE = 100

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "bower_components",
        "dist",
        "build",
        "target",
        "out",
        ".venv",
        "venv",
        ".env",
        "env",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".eggs",
        ".idea",
        ".vscode",
        ".next",
        ".nuxt",
        ".cache",
        ".gradle",
        ".terraform",
        "coverage",
        "htmlcov",
        "site-packages",
        "vendor",
        ".ssh",
        ".gnupg",
        ".aws",
    }
)
SKIP_DIR_GLOBS = ("*.egg-info",)

SECRET_GLOBS: tuple[str, ...] = (
    *SECRET_FILE_GLOBS,
    "*.ppk",
    "*.gpg",
    "*.asc",
    "*.ovpn",
    "credentials",
    "secrets.*",
    "*.secret",
    "*.secrets",
)
"""Names never ingested: the path guard's secret files plus more that rarely hold code worth indexing."""
_PRIVATE_KEY = re.compile(rb"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----")

BINARY_EXTENSIONS = frozenset(
    [
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".bmp",
        ".ico",
        ".webp",
        ".tiff",
        ".psd",
        ".svgz",
        ".pdf",
        ".zip",
        ".gz",
        ".tgz",
        ".bz2",
        ".xz",
        ".7z",
        ".rar",
        ".tar",
        ".jar",
        ".war",
        ".so",
        ".dll",
        ".dylib",
        ".exe",
        ".bin",
        ".o",
        ".a",
        ".obj",
        ".class",
        ".pyc",
        ".pyo",
        ".whl",
        ".egg",
        ".wasm",
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".eot",
        ".mp3",
        ".mp4",
        ".wav",
        ".ogg",
        ".flac",
        ".avi",
        ".mov",
        ".mkv",
        ".webm",
        ".sqlite",
        ".sqlite3",
        ".db",
        ".pkl",
        ".pickle",
        ".npy",
        ".npz",
        ".pt",
        ".pth",
        ".onnx",
        ".safetensors",
        ".parquet",
        ".feather",
        ".h5",
        ".hdf5",
        ".glb",
        ".gltf",
        ".blend",
        ".fbx",
        ".iso",
        ".dmg",
        ".deb",
        ".rpm",
    ]
)
SKIP_FILES = frozenset(
    {"package-lock.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock", "cargo.lock", "uv.lock", "composer.lock"}
)
SKIP_FILE_GLOBS = ("*.min.js", "*.min.css", "*.map", "*.lock")

LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
}
PROSE_EXTENSIONS = frozenset({".txt", ".rst", ".adoc", ".org", ".tex", ".html", ".htm", ""})


def language_of(path: str) -> str:
    ext = posixpath.splitext(path)[1].lower()
    return LANGUAGES.get(ext, ext.lstrip(".") or "text")


def is_secret_name(name: str) -> bool:
    lowered = name.lower()
    return any(fnmatch.fnmatchcase(lowered, glob) for glob in SECRET_GLOBS)


def looks_binary(data: bytes) -> bool:
    return b"\x00" in data[:8192]


def holds_private_key(data: bytes) -> bool:
    return _PRIVATE_KEY.search(data) is not None


# ---- the walk --------------------------------------------------------------------------------------


@dataclass
class WalkEntry:
    path: str  # absolute
    rel: str  # relative to the project root, posix
    size: int
    mtime_ns: int


@dataclass
class WalkStats:
    skipped_secret: int = 0
    skipped_ignored: int = 0
    skipped_binary: int = 0
    skipped_large: int = 0
    skipped_other: int = 0
    skipped_projects: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def walk_tree(
    root: str,
    start_rel: str = "",
    *,
    excluded: Sequence[str] = (),
    hidden: Sequence[Path] = (),
    max_file_bytes: int = MAX_FILE_BYTES,
    stats: WalkStats | None = None,
    extra_secret: Callable[[str], bool] | None = None,
) -> Iterator[WalkEntry]:
    """Files under `root/start_rel` worth ingesting, sorted, with the filters of the module docstring
    (on the suite's one walker, `shared.text.walking`, with the .gitignore files of the whole git tree).

    `excluded`: relative directories skipped entirely (sub-directories that are projects of their own).
    `hidden`: absolute real paths never walked (the suite's own state, `PathGuard.private_inside_roots()`).
    """
    stats = stats if stats is not None else WalkStats()
    excluded_set = {e.strip("/") for e in excluded if e.strip("/")}

    def skip(name: str, rel: str, is_dir: bool) -> bool:
        if is_dir:
            return _skip_directory(name, rel, excluded_set, stats)
        return _skip_file_name(name, extra_secret, stats)

    walked = WalkerStats()
    for entry in walk(
        root,
        start_rel=start_rel,
        ignore_rules=rules_down_to(root, start_rel, ancestors=True),
        skip=skip,
        hidden=hidden,
        stats=walked,
    ):
        if entry.is_dir:
            continue
        try:
            info = os.lstat(entry.path)
        except OSError:
            continue
        if _skip_file(entry.name, info, max_file_bytes, stats):
            continue
        yield WalkEntry(entry.path, entry.rel, info.st_size, info.st_mtime_ns)
    stats.skipped_ignored += walked.skipped_ignored


def _skip_directory(name: str, rel: str, excluded: set[str], stats: WalkStats) -> bool:
    """A vendored or build directory, or a project of its own (counted in `stats`)."""
    lowered = name.lower()
    if lowered in SKIP_DIRS or any(fnmatch.fnmatchcase(lowered, g) for g in SKIP_DIR_GLOBS):
        stats.skipped_ignored += 1
        return True
    if rel in excluded:
        stats.skipped_projects += 1
        return True
    return False


def _skip_file_name(name: str, extra_secret: Callable[[str], bool] | None, stats: WalkStats) -> bool:
    """A file named as a secret, a lock file or a minified one (counted in `stats`)."""
    lowered = name.lower()
    if is_secret_name(name) or (extra_secret is not None and extra_secret(name)):
        stats.skipped_secret += 1
        return True
    if lowered in SKIP_FILES or any(fnmatch.fnmatchcase(lowered, g) for g in SKIP_FILE_GLOBS):
        stats.skipped_ignored += 1
        return True
    return False


def _skip_file(name: str, info: os.stat_result, max_file_bytes: int, stats: WalkStats) -> bool:
    """Not a regular file of its own, binary by its extension, or too large (counted in `stats`)."""
    if not stat.S_ISREG(info.st_mode):  # symbolic links (never followed), devices, sockets, fifos
        stats.skipped_other += 1
        return True
    if info.st_nlink > 1:  # a hard link: its other name may be a secret or lie outside the project
        stats.skipped_other += 1
        return True
    if posixpath.splitext(name.lower())[1] in BINARY_EXTENSIONS:
        stats.skipped_binary += 1
        return True
    if info.st_size > max_file_bytes:
        stats.skipped_large += 1
        return True
    return False
