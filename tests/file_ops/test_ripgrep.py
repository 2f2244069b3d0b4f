"""search_files with ripgrep as its engine: the same results as the Python walk, on real trees with real rg."""

from __future__ import annotations

import codecs
import os
import re
import shutil
import stat
import time
from collections.abc import AsyncIterator
from dataclasses import astuple
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_sections.servers.file_ops import ripgrep, searching, walking
from mcp_sections.servers.file_ops.searching import SearchOutcome
from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.ground.programs import DEFAULT_SEARCH_PATH
from tests.in_memory import section_in_memory
from tests.stdio import call

pytestmark = pytest.mark.skipif(
    shutil.which("rg", path=DEFAULT_SEARCH_PATH) is None, reason="ripgrep (rg) is not installed"
)

MAX_FILE_BYTES = 4096
SECRET = "sk-live-do-not-leak"
DEFAULTS: dict[str, Any] = {
    "regex": False,
    "case_sensitive": True,
    "include": [],
    "exclude": [],
    "context_lines": 0,
    "max_results": 1000,
    "respect_gitignore": True,
    "include_hidden": False,
    "max_file_bytes": MAX_FILE_BYTES,
    "max_entries": 100_000,
    "timeout_seconds": 30.0,
}


def build_tree(base: Path) -> Path:
    """A root full of the cases where a second engine could differ, plus a directory outside it."""
    root = base / "root"
    outside = base / "outside"
    for directory in ("src/pkg", "docs", "ignored", "logs", "sub/deep", ".cfg", ".git", "sub/.ssh", "-rf", "é"):
        (root / directory).mkdir(parents=True, exist_ok=True)
    outside.mkdir()
    (outside / "leak.txt").write_text(f"needle {SECRET}\n")
    files: dict[str, str | bytes] = {
        "a.txt": "needle at line one\nsecond\nneedle again\n",
        "a b.txt": "x\nneedle with a space\n",
        "A.txt": "NEEDLE upper\nNeedle mixed\n",
        "src/main.py": "import os\n\ndef needle():\n    return 'Needle'\n\ndef other():\n    pass\n",
        "src/pkg/mod.py": "def helper(x):\n    return x  # needle\n",
        "src/pkg/notes.md": "a needle in docs\n" * 5,
        "docs/crlf.txt": "first\r\nneedle crlf\r\nlast\r\n",
        "docs/cr-only.txt": "one\rneedle after cr\rthree\r",
        "docs/separators.txt": "a\x0cneedle after form feed\x1cb\u2028needle after line sep\x85c\n",
        "docs/long.txt": "x" * 10_500 + " needle far out\n" + "needle short\n",
        "docs/folding.txt": "stra\u00dfe\nthe \u212aelvin sign\n\u017fs long s\n\u0130stanbul\n",
        "docs/cafe-utf8.txt": "un caf\u00e9 needle\n",
        "docs/context.txt": "".join(f"row {n}{' needle' if n in (2, 9) else ''}\n" for n in range(1, 13)),
        "ignored/hit.txt": "needle in an ignored dir\n",
        "logs/app.log": "needle logged\n",
        "logs/keep.log": "needle kept\n",
        "top.txt": "needle anchored ignore\n",
        "sub/top.txt": "needle not the anchored one\n",
        "sub/deep/x.tmp": "needle tmp\n",
        "sub/deep/y.txt": "needle deep\n",
        "sub/.gitignore": "*.tmp\n",
        ".gitignore": "ignored/\n*.log\n!keep.log\n/top.txt\n",
        ".hidden.txt": "needle hidden\n",
        ".cfg/settings.txt": "needle in a hidden dir\n",
        ".git/config": "needle in git\n",
        ".env": f"TOKEN={SECRET} needle\n",
        ".env.local": f"needle {SECRET}\n",
        "server.pem": f"needle {SECRET}\n",
        "ID_RSA": f"needle {SECRET}\n",
        "X.PEM": f"needle {SECRET}\n",
        "credentials.json": f'{{"needle": "{SECRET}"}}\n',
        "sub/.ssh/config": f"needle {SECRET}\n",
        "-e": "-e needle --pre=cat\n",
        "--pre=x": "needle option-like name\n",
        "-rf/inner.txt": "needle in -rf\n",
        "é/accent.txt": "needle accent dir\n",
        "many.txt": "".join(f"needle {n}\n" for n in range(30)),
        "empty.txt": "",
        "big.txt": "needle\n" + "y" * MAX_FILE_BYTES,
        "exact.txt": "needle\n" + "z" * (MAX_FILE_BYTES - 7),
        "binary.bin": b"\x00\x01needle\x00",
        "late-nul.txt": b"q" * 9000 + b"\x00 needle\n",
        "latin1.txt": "un caf\u00e9 needle\nna\u00efve\n".encode("latin-1"),
        "utf16.txt": "first\nneedle in utf-16\n".encode("utf-16"),
        "utf32.txt": "needle in utf-32\n".encode("utf-32"),
        "utf8bom.txt": codecs.BOM_UTF8 + b"needle after bom\n",
    }
    for name, content in files.items():
        path = root / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))
    (root / "link-out.txt").symlink_to(outside / "leak.txt")
    (root / "link-out-dir").symlink_to(outside)
    (root / "link-in.txt").symlink_to(root / "a.txt")
    (root / "src" / "loop").symlink_to(root / "src")
    os.mkfifo(root / "fifo")
    return root


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tree(tmp_path_factory.mktemp("rg-parity").resolve())


def run(root: Path, pattern: str, path: str = ".", **options: Any) -> SearchOutcome:
    return searching.search_files(PathGuard([root]), pattern, path, **{**DEFAULTS, **options})


def comparable(outcome: SearchOutcome) -> tuple[Any, ...]:
    """Everything the engines must agree on (the counts of files searched and skipped are documented apart)."""
    matches = [astuple(match) for match in outcome.matches]
    return outcome.base, matches, outcome.files_matched, outcome.truncated, outcome.timed_out


def both(monkeypatch: pytest.MonkeyPatch, root: Path, pattern: str, **options: Any) -> SearchOutcome:
    """The Python engine's outcome, after checking that rg (without falling back) gives the same."""
    expected = run(root, pattern, engine="python", **options)
    with monkeypatch.context() as patch:
        patch.setattr(searching, "walk", lambda *args, **kwargs: pytest.fail("fell back to the Python walk"))
        actual = run(root, pattern, engine="auto", **options)
    assert comparable(actual) == comparable(expected)
    return expected


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("needle", {}),
    ("needle", {"case_sensitive": False}),
    ("NEEDLE", {"case_sensitive": False, "respect_gitignore": False}),
    ("needle", {"include_hidden": True}),
    ("needle", {"include_hidden": True, "respect_gitignore": False}),
    ("needle", {"respect_gitignore": False}),
    ("needle", {"include": ["*.py"]}),
    ("needle", {"include": ["*.txt", "*.md"], "exclude": ["docs"]}),
    ("needle", {"include": ["src/**/*.py"]}),
    ("needle", {"exclude": ["*.txt"]}),
    ("needle", {"exclude": ["sub/**", "[a-c]*"]}),
    ("needle", {"context_lines": 2}),
    ("needle", {"context_lines": 1, "include": ["context.txt", "crlf.txt", "separators.txt"]}),
    ("needle", {"max_results": 1}),
    ("needle", {"max_results": 5}),
    ("needle", {"max_results": 31, "include": ["many.txt", "a.txt"]}),
    ("café", {}),
    ("ss", {"case_sensitive": False}),
    ("kelvin", {"case_sensitive": False}),
    ("after", {}),
    ("-e needle", {}),
    ("--pre=cat", {}),
    (SECRET, {"include_hidden": True, "respect_gitignore": False}),
    (r"def \w+\(", {"regex": True}),
    (r"def \w+\(", {"regex": True, "context_lines": 1}),
    (r"^needle", {"regex": True}),
    (r"needle$", {"regex": True, "include_hidden": True}),
    (r"\bneedle\b", {"regex": True}),
    (r"n[e]+dle \d+", {"regex": True}),
    (r"(?i)NEEDLE (upper|mixed)", {"regex": True}),
    (r"caf.", {"regex": True}),
    (r"caf\w", {"regex": True}),
    (r"caf[^a-z]", {"regex": True}),
    (r"\u212aelvin", {"regex": True}),
    (r"k", {"regex": True, "case_sensitive": False, "include": ["folding.txt"]}),
    (r"İ", {"regex": True, "case_sensitive": False}),
    (r"far out$", {"regex": True}),
    (r"x{3}\s+needle", {"regex": True}),
    (r"(?<=un )caf", {"regex": True}),
    (r"row 1[0-2]?(?! needle)", {"regex": True, "max_results": 4}),
    (r"needle|after", {"regex": True, "max_results": 7}),
    (r"-e", {"regex": True}),
    (r"\n", {"regex": True}),
    (r"a*", {"regex": True, "max_results": 12}),
]


@pytest.mark.parametrize(("pattern", "options"), CALLS, ids=[f"{n}-{p[:20]}" for n, (p, _) in enumerate(CALLS)])
def test_rg_matches_the_python_engine(
    monkeypatch: pytest.MonkeyPatch, tree: Path, pattern: str, options: dict[str, Any]
) -> None:
    both(monkeypatch, tree, pattern, **options)


@pytest.fixture(scope="module")
def wide_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same cases beside 150 more matching files: over 2 x max_results + 100 candidates, rg streams."""
    root = build_tree(tmp_path_factory.mktemp("rg-wide").resolve())
    (root / "zz").mkdir()
    for n in range(150):
        (root / "zz" / f"{n:03d}.txt").write_text(f"x\nneedle {n}\n")
    return root


@pytest.mark.parametrize(
    ("pattern", "options"),
    [
        ("needle", {"max_results": 1}),
        ("needle", {"max_results": 20, "include_hidden": True, "context_lines": 1}),
        ("NEEDLE", {"max_results": 3, "case_sensitive": False, "respect_gitignore": False}),
        (r"^needle \d", {"regex": True, "max_results": 2}),
        (r"a*", {"regex": True, "max_results": 12}),
        ("needle", {"max_results": 40}),
    ],
)
def test_rg_streamed_in_the_walks_order_matches_too(
    monkeypatch: pytest.MonkeyPatch, wide_tree: Path, pattern: str, options: dict[str, Any]
) -> None:
    both(monkeypatch, wide_tree, pattern, **options)


def test_subdirectory_and_counts(monkeypatch: pytest.MonkeyPatch, tree: Path) -> None:
    outcome = both(monkeypatch, tree, "needle", path="src")
    assert outcome.base == str(tree / "src")
    assert {m.path for m in outcome.matches} == {"main.py", "pkg/mod.py", "pkg/notes.md"}
    rg = run(tree, "needle", path="src", engine="auto")
    assert (rg.files_searched, rg.files_skipped) == (outcome.files_searched, outcome.files_skipped) == (3, 0)
    assert [m.path for m in both(monkeypatch, tree, "needle", path="-rf").matches] == ["inner.txt"]
    whole = run(tree, "needle", engine="auto", include_hidden=True)
    assert whole.files_searched >= whole.files_matched > 10


def test_what_the_engines_return_is_what_the_walk_allows(monkeypatch: pytest.MonkeyPatch, tree: Path) -> None:
    found = both(monkeypatch, tree, "needle", include_hidden=True)
    paths = {match.path for match in found.matches}
    assert {"a.txt", "-e", "--pre=x", "-rf/inner.txt", "é/accent.txt", ".hidden.txt", "logs/keep.log"} <= paths
    assert {"docs/separators.txt", "docs/crlf.txt", "latin1.txt", "utf16.txt", "utf32.txt", "exact.txt"} <= paths
    assert not paths & {"ignored/hit.txt", "logs/app.log", "top.txt", "sub/deep/x.tmp", ".git/config"}
    assert not paths & {"big.txt", "binary.bin", "link-in.txt", "link-out.txt"}
    assert not [path for path in paths if "env" in path or path.lower().endswith((".pem", "id_rsa")) or ".ssh" in path]
    assert SECRET not in str(found)


def test_replay_admits_exactly_what_the_walk_yields(tree: Path) -> None:
    guard = PathGuard([tree])
    every = sorted(
        str(Path(directory, name).relative_to(tree))
        for directory, _, names in os.walk(tree)
        for name in names
        if not Path(directory, name).is_symlink()
    )
    for options in (
        {"include_hidden": False, "gitignore": True, "exclude": [], "include": []},
        {"include_hidden": True, "gitignore": True, "exclude": ["docs", "*.py"], "include": []},
        {"include_hidden": True, "gitignore": False, "exclude": ["sub/**"], "include": ["*.txt", "src/*"]},
    ):
        include = options.pop("include")
        walked = {
            entry.rel
            for entry in walking.walk(guard, str(tree), **options)
            if not entry.is_dir
            and not entry.is_symlink
            and not (include and not walking.name_matches(entry.name, entry.rel, include))
        }
        replay = ripgrep._Replay(guard, str(tree), include=include, **options)  # type: ignore[arg-type]
        assert {rel for rel in every if replay.admits(rel)} == walked, options


def test_the_superset_pattern(tmp_path: Path) -> None:
    assert ripgrep.rg_pattern("a-b", regex=False, case_sensitive=True) == r"(?:a\x{2D}b)|(?-u:\xFF\xFE|\xFE\xFF)"
    assert ripgrep.rg_pattern("ab", regex=False, case_sensitive=False).startswith("(?:[Aa][Bb])|")
    assert r"(?-u:[\xE9])" in ripgrep.rg_pattern("é", regex=False, case_sensitive=True)  # Latin-1 files
    assert "(?-u:[\\x80-\\xFF]" in ripgrep.rg_pattern(r"a.b", regex=True, case_sensitive=True)
    assert "\\x{212A}" in ripgrep.rg_pattern("k", regex=True, case_sensitive=False)
    for pattern, regex, case_sensitive in (("é", False, False), ("a{e<=1}", True, True), ("[[:alpha:]]", True, True)):
        with pytest.raises(ripgrep.RipgrepUnavailable):
            ripgrep.rg_pattern(pattern, regex=regex, case_sensitive=case_sensitive)


def test_case_folds_of_ascii_letters_are_complete() -> None:
    """The table of non-ASCII characters that `re` (and `regex`) match for an ASCII letter with IGNORECASE."""
    engines = [re.compile("[a-z]", re.IGNORECASE).fullmatch]
    if ripgrep._regex_module is not None:
        engines.append(ripgrep._regex_module.compile("[a-z]", ripgrep._regex_module.IGNORECASE).fullmatch)
    found: dict[str, set[int]] = {}
    for code in range(0x80, 0x110000):
        char = chr(code)
        if any(match(char) for match in engines):
            for letter in "abcdefghijklmnopqrstuvwxyz":
                if re.fullmatch(letter, char, re.IGNORECASE) or (
                    ripgrep._regex_module is not None
                    and ripgrep._regex_module.fullmatch(letter, char, ripgrep._regex_module.IGNORECASE)
                ):
                    found.setdefault(letter, set()).add(code)
    assert found == {letter: set(codes) for letter, codes in ripgrep._FOLDS.items()}


def test_the_call_is_argv_only_and_ignores_rg_config(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tree: Path
) -> None:
    config = tmp_path / "rgrc"
    config.write_text("--invert-match\n--follow\n--pre=/bin/cat\n")
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", str(config))
    started: list[list[str]] = []
    original = ripgrep.subprocess.Popen

    def spy(argv: list[str], **kwargs: Any) -> Any:
        started.append(argv)
        assert kwargs["env"] == ripgrep.ENVIRONMENT and "shell" not in kwargs
        return original(argv, **kwargs)

    monkeypatch.setattr(ripgrep.subprocess, "Popen", spy)
    both(monkeypatch, tree, "-e needle")
    search = next(argv for argv in started if "--json" in argv)
    assert search[0] == shutil.which("rg", path=DEFAULT_SEARCH_PATH) and search[1] == "--no-config"
    assert search[search.index("-e") + 1].startswith("(?:\\x{2D}e") and search[-2:] == ["--", str(tree)]
    assert not {"-L", "--follow", "-z", "--search-zip"} & set(search) and not [
        a for a in search if a.startswith("--pre")
    ]


def test_fallback_when_rg_is_absent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tree: Path) -> None:
    (tmp_path / "empty").mkdir()
    monkeypatch.setattr(ripgrep, "SEARCH_PATH", str(tmp_path / "empty"))
    assert ripgrep.executable() is None
    used: list[str] = []
    original = searching.walk
    monkeypatch.setattr(searching, "walk", lambda *args, **kwargs: used.append("walk") or original(*args, **kwargs))
    outcome = run(tree, "needle", engine="auto")
    assert used == ["walk"] and comparable(outcome) == comparable(run(tree, "needle", engine="python"))


@pytest.mark.parametrize(
    ("setup", "pattern", "options"),
    [
        ("rgignore", "needle", {}),
        ("braces", "needle", {}),
        ("none", "STRAßE", {"case_sensitive": False}),
        ("none", "need{e<=1}e", {"regex": True}),
        ("order", "^needle", {"max_results": 1, "regex": True}),
    ],
)
def test_fallbacks_give_the_python_result(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, setup: str, pattern: str, options: dict[str, Any]
) -> None:
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    (root / "d" / "a.txt").write_text("needle\nStraße\n")
    (root / "d" / "{x,y}.txt").write_text("needle in braces\n")
    (root / "d" / "x.txt").write_text("needle x\n")
    if setup == "rgignore":
        (root / ".rgignore").write_text("x.txt\n")
    elif setup == "braces":
        (root / ".gitignore").write_text("{x,y}.txt\n")
    elif setup == "order":  # more than 2 x max_results + 100 files: rg streams them in its own order
        weird_names(root / "a", 120)
    used: list[str] = []
    original = searching.walk
    monkeypatch.setattr(searching, "walk", lambda *args, **kwargs: used.append("walk") or original(*args, **kwargs))
    outcome = run(root, pattern, engine="auto", **options)
    assert used == ["walk"]
    assert comparable(outcome) == comparable(run(root, pattern, engine="python", **options))


def weird_names(directory: Path, plain: int) -> None:
    """Names that sort differently as bytes and as Python strings (undecodable, non-BMP, private use), after
    `plain` files that rg reports for '^needle' and Python does not match."""
    directory.mkdir(parents=True)
    for name in (b"\xff", "\U0001f600".encode(), "\ue000".encode()):
        (Path(os.fsdecode(os.path.join(os.fsencode(directory), name)))).write_bytes(b"needle\n")
    for n in range(plain):
        (directory / f"f{n:03d}").write_bytes(b"x needle\n")


def test_names_are_sorted_as_the_walk_sorts_them(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    weird_names(tmp_path / "root", 3)
    found = both(monkeypatch, tmp_path / "root", "needle")
    assert [m.path for m in found.matches][-3:] == ["\udcff", "\ue000", "\U0001f600"]


def test_a_gitignore_that_both_read_alike_keeps_rg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / ".gitignore").write_text("# comment\n*.py[cod]\nbuild/\n/a/b/*.txt\n!a/b/keep.txt\n**/cache  \r\n")
    for name in ("x.pyc", "x.py", "build/y.txt", "a/b/z.txt", "a/b/keep.txt", "a/cache/w.txt", "a/v.txt"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("needle\n")
    found = both(monkeypatch, root, "needle")
    assert {m.path for m in found.matches} == {"x.py", "a/b/keep.txt", "a/v.txt"}


def test_max_results_stops_rg_early(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    root = tmp_path / "root"
    for n in range(120):  # over 2 x max_results + 100 candidates: rg streams them in the walk's order
        (root / f"d{n:02d}").mkdir(parents=True)
        (root / f"d{n:02d}" / "f.txt").write_text("needle\n")
    found = both(monkeypatch, root, "needle", max_results=3)
    assert found.truncated and [m.path for m in found.matches] == ["d00/f.txt", "d01/f.txt", "d02/f.txt"]
    (root / "d01" / ".gitignore").write_text("{a,b}\n")  # before the stop: the Python engine decides
    used: list[str] = []
    original = searching.walk
    monkeypatch.setattr(searching, "walk", lambda *args, **kwargs: used.append("walk") or original(*args, **kwargs))
    assert comparable(run(root, "needle", engine="auto", max_results=3)) == comparable(found)
    assert used == ["walk"]
    # when rg's listing of the ignore files has not ended, the walk checks those up to where the search stopped
    deadline = time.monotonic() + 30
    options: dict[str, Any] = {"regex": False, "case_sensitive": True, "include": [], "exclude": []}
    with ripgrep.Candidates(
        PathGuard([root]),
        str(root),
        "needle",
        **options,
        gitignore=True,
        include_hidden=False,
        max_file_bytes=MAX_FILE_BYTES,
        max_results=3,
        deadline=deadline,
    ) as candidates:
        candidates._check_up_to(["d00", "f.txt"], names=True, ignore_files=True)
        with pytest.raises(ripgrep.RipgrepUnavailable):
            candidates._check_up_to(["d01", "f.txt"], names=True, ignore_files=True)


def test_timeout_kills_rg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tree: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "rg").write_text(f"#!/bin/sh\necho $$ >> {tmp_path}/pids\nexec sleep 60\n")
    (fake / "rg").chmod(0o755)
    monkeypatch.setattr(ripgrep, "SEARCH_PATH", str(fake))
    started = time.monotonic()
    outcome = run(tree, "needle", engine="auto", timeout_seconds=0.5)
    assert outcome.timed_out and outcome.matches == [] and time.monotonic() - started < 5
    pids = [int(line) for line in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 2  # the search and the listing of ignore files (the count waits for the latter)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # killed and reaped


def test_a_file_becoming_a_link_to_a_secret_is_not_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret.txt").write_text(f"needle {SECRET}\n")
    (root / "a.txt").write_text("needle\n")
    guard = PathGuard([root])
    replay = ripgrep._Replay(guard, str(root), include=[], exclude=[], gitignore=False, include_hidden=False)
    assert replay.admits("a.txt")
    (root / "a.txt").unlink()
    (root / "a.txt").symlink_to(tmp_path / "secret.txt")
    assert not replay.admits("a.txt") and not replay.admits("../secret.txt") and not replay.admits("./a.txt")
    assert stat.S_ISLNK(os.lstat(root / "a.txt").st_mode)


# -- through the real server, in memory --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
async def servers(tree: Path) -> AsyncIterator[dict[str, Client]]:
    config = tree.parent / "config.toml"
    config.write_text("", encoding="utf-8")
    env = {"MCP_SECTIONS_CONFIG": str(config), "MCP_SECTIONS_ROOTS": ""}
    async with (
        section_in_memory("file_ops", "--root", str(tree), env=env) as auto,
        section_in_memory(
            "file_ops", "--root", str(tree), env={**env, "MCP_SECTIONS_FILE_OPS_SEARCH_ENGINE": "python"}
        ) as python,
    ):
        yield {"auto": auto, "python": python}


@pytest.mark.anyio
async def test_the_tool_gives_the_same_answers_through_the_server(servers: dict[str, Client]) -> None:
    for arguments in (
        {"pattern": "needle"},
        {"pattern": "needle", "include_hidden": True, "context_lines": 1, "max_results": 40},
        {"pattern": r"def \w+\(", "regex": True, "path": "src"},
        {"pattern": SECRET, "include_hidden": True, "respect_gitignore": False},
    ):
        auto = await call(servers["auto"], "search_files", **arguments)
        python = await call(servers["python"], "search_files", **arguments)
        for data in (auto, python):
            data.pop("files_searched")
            data.pop("files_skipped")
        assert auto == python
        assert SECRET not in str(auto)
