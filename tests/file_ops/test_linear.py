"""search_files' regular expressions on rg's linear-time engine (#38 point 8): a pattern that backtracks for minutes
in Python is answered at once through the real tool, and rg's answer for each line is the Python engine's."""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from mcp_sections.servers.file_ops import linear, searching
from mcp_sections.shared.ground.programs import DEFAULT_SEARCH_PATH
from tests.in_memory import section_in_memory
from tests.stdio import call, fail

pytestmark = pytest.mark.skipif(
    shutil.which("rg", path=DEFAULT_SEARCH_PATH) is None, reason="ripgrep (rg) is not installed"
)

CATASTROPHIC = "(.*a){20}!x"
LONG_LINE = "a" * 29_990 + "!x" + "b" * 8  # 30,000 characters; the match ends far past any cut


@pytest.fixture(scope="module")
async def servers(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Path, Client, Client]]:
    root = tmp_path_factory.mktemp("linear").resolve()
    (root / "long.txt").write_text(f"first\n{LONG_LINE}\nlast\n")
    (root / "no-match.txt").write_text("a" * 30_000 + "\n")
    (root / "accents.txt").write_text("un café noté\nnaïve\n")
    config = root.parent / "linear-config.toml"
    config.write_text("", encoding="utf-8")
    env = {
        "MCP_SECTIONS_CONFIG": str(config),
        "MCP_SECTIONS_ROOTS": "",
        "MCP_SECTIONS_FILE_OPS_SEARCH_TIMEOUT_SECONDS": "5",
    }
    python = {**env, "MCP_SECTIONS_FILE_OPS_SEARCH_ENGINE": "python"}
    async with (
        section_in_memory("file_ops", "--root", str(root), env=env) as auto,
        section_in_memory("file_ops", "--root", str(root), env=python) as python_only,
    ):
        yield root, auto, python_only


@pytest.mark.anyio
async def test_a_catastrophic_pattern_on_a_30000_character_line_is_answered(
    servers: tuple[Path, Client, Client],
) -> None:
    _, client, _ = servers
    for path in (".", "long.txt"):  # a directory, and a single file
        data = await call(client, "search_files", pattern=CATASTROPHIC, regex=True, path=path, context_lines=1)
        assert not data["timed_out"]
        [match] = data["matches"]
        assert (match["path"], match["line_number"], match["before"], match["after"]) == (
            "long.txt",
            2,
            ["first"],
            ["last"],
        )
    none = await call(client, "search_files", pattern=CATASTROPHIC, regex=True, path="no-match.txt")
    assert none["matches"] == [] and not none["timed_out"]


@pytest.mark.anyio
async def test_the_backtracking_guards_stay_where_python_matches(servers: tuple[Path, Client, Client]) -> None:
    _, auto, python = servers
    nested = {"pattern": "(a+)+!x", "regex": True}
    assert [m["line_number"] for m in (await call(auto, "search_files", **nested))["matches"]] == [2]
    await fail(python, "search_files", "INVALID_INPUT", **nested)  # search_engine = "python": refused as before
    await fail(auto, "search_files", "INVALID_INPUT", pattern=r"(a)\1", regex=True)  # backreferences: Python only
    await fail(auto, "search_files", "INVALID_INPUT", pattern="(unclosed", regex=True)
    # a lookbehind and a word boundary on non-ASCII text are matched in Python, with the same answers
    for pattern in (r"(?<=un )caf", r"\bnot\w\b", r"na\wve"):
        answers = [await call(engine, "search_files", pattern=pattern, regex=True) for engine in (auto, python)]
        assert answers[0]["matches"] == answers[1]["matches"] != []


LINES = [
    "",
    "plain ascii words_42 and tabs\there",
    "café crème brûlée naïve",
    "straße STRASSE ß ẞ",
    "Kelvin \u212a k K long s \u017f S",
    "\u0130stanbul \u0131 i I",
    "\u01c5 \u01c4 \u01c6 titlecase",
    "Ωμέγα ΣΊΣΥΦΟΣ ς σ",
    "漢字かなカナ 123 ١٢٣ ٣",
    "emoji \U0001f600 and \U0001f680!",
    "combining e\u0301 a\u0308",
    "spaces\u00a0nbsp\u2003em\x1funit\x1f",
    "NUL \x00 and DEL \x7f",
    "x" * 3000 + "needle",
]

PATTERNS = [
    r"\w+",
    r"^\W+$",
    r"\s\S",
    r"\d{3}",
    r"\D\d",
    r"[^\w\s]",
    r"(?a)\w\W",
    r"(?a)\s",
    r"(?i)k",
    r"(?i)s",
    r"(?i)straße",
    r"(?i)[a-z]+ [à-ÿ]",
    r"(?i)ǆ",
    r"(?i)σ",
    r"(?i)i",
    r"\u0130",
    r"[à-ÿ]{2}",
    r"caf.\b",
    r"\bcr\w+",
    r"(?a)\bna\w+ve\b",
    r"^$",
    r"^(ab|ca|pl)",
    r"e$|^x",
    r"(a|b)*c",
    r"(?:x{2,3})+needle",
    r"[\x00-\x1f]",
    r"\x7f",
    r"\U0001f600.*!",
    r"(?s).",
    r"\n",
    r"a{0}",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_rg_answers_each_line_as_the_python_engine_does(pattern: str) -> None:
    python = searching._line_matcher(pattern, regex=True, case_sensitive=True, deadline=time.monotonic() + 60)
    for case_sensitive in (True, False):
        if not case_sensitive:
            python = searching._line_matcher(pattern, regex=True, case_sensitive=False, deadline=time.monotonic() + 60)
        translation = linear.exact_pattern(pattern, case_sensitive=case_sensitive)
        with linear.RgLines(translation, time.monotonic() + 60) as rg:
            usable = [line for line in LINES if rg.usable(line)]
            assert set(rg.matching(usable)) == {n for n, line in enumerate(usable) if python(line)}, case_sensitive
            assert len(usable) == len(LINES) or translation.ascii_only


def test_what_no_automaton_does_is_left_to_python() -> None:
    for pattern in (r"(?<=a)b", r"a(?!b)", r"(a)\1", r"(?>a+)a", r"a++", r"(a)?(?(1)b|c)", r"a{e<=1}"):
        with pytest.raises(linear.RipgrepUnavailable):
            linear.exact_pattern(pattern, case_sensitive=True)
    assert linear.exact_pattern(r"\bx", case_sensitive=True).ascii_only
    assert not linear.exact_pattern(r"(?a)\bx", case_sensitive=True).ascii_only
    assert re.fullmatch(r"\[\\x\{61\}\]", linear.exact_pattern("a", case_sensitive=True).expression)
