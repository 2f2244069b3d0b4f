"""Ground truth read from a page itself, and the score of a markdown rendering of it.

From the page's main region (its navigation removed): every non-blank line of every `<pre>` (exact, with its
indentation), every table row with text, every heading (level and text), every relative link (fragments
included) and what it must resolve to against the page's URL; from its navigation: the link and heading texts
that appear nowhere in the main region (navigation that must not leak into the output).

The output is read as markdown: a line inside a fenced block loses the indentation of its opening fence (as a
markdown reader strips it when the block sits in a list); outside fences, escapes, emphasis, inline code marks
and link targets are removed before rows and headings are compared.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

from lxml import html as lxml_html

PERMALINK_MARKS = "¶#§🔗"
_FENCE = re.compile(r"^((?: *> ?)* *)(`{3,}|~{3,})")
_CONTAINER = re.compile(r"^(?: *(?:[-*+]|\d+[.)]) +| *> ?)+")  # list markers and quote marks before a block
_HEADING = re.compile(r"^ *(#{1,6})[ \t]+(.*?)[ \t#]*$")
_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\((?:<[^>]*>|[^)\s]*)(?:\s+\"[^\"]*\")?\)")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")
_MARKS = re.compile(r"\*\*|__|`|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w)")
_SPACE = re.compile(r"\s+")


@dataclass
class Truth:
    code_lines: list[str]
    rows: list[list[str]]
    headings: list[tuple[int, str]]
    links: list[str]  # absolute URLs the relative links must become
    navigation: list[str]  # navigation texts absent from the main region


@dataclass
class Score:
    code: tuple[int, int] = (0, 0)  # (kept, of)
    rows: tuple[int, int] = (0, 0)
    headings: tuple[int, int] = (0, 0)
    links: tuple[int, int] = (0, 0)
    navigation: tuple[int, int] = (0, 0)  # (leaked, of)
    permalinks: int = 0  # permalink marks left in headings
    chars: int = 0
    missing: dict[str, list[str]] = field(default_factory=dict)  # a few misses of each kind, to read


def norm(text: str) -> str:
    return _SPACE.sub(" ", text.replace("\u00a0", " ")).strip()


def truth(html: bytes, url: str, main_xpath: str, navigation_xpaths: tuple[str, ...]) -> Truth:
    document = lxml_html.document_fromstring(html)
    navigation_nodes = [node for xpath in navigation_xpaths for node in document.xpath(xpath)]
    navigation_texts = [norm(n.text_content()) for nav in navigation_nodes for n in nav.xpath(".//a|.//h1|.//h2|.//h3")]
    for node in navigation_nodes:
        if node.getparent() is not None:
            node.drop_tree()
    main = document.xpath(main_xpath)[0]
    code_lines = _code_lines(main)  # first: it turns each <br> of a <pre> into a line break of the main text
    base = urljoin(url, document.xpath("string(//base/@href)") or url)
    main_text = norm(main.text_content())
    navigation = sorted({text for text in navigation_texts if len(text) >= 8 and " " in text and text not in main_text})
    return Truth(code_lines, _rows(main), _headings(main), _links(main, base), navigation)


def _code_lines(main: Any) -> list[str]:
    """Every non-blank line of every outermost `<pre>`, a `<br>` in it read as a line break."""
    for br in main.xpath(".//pre//br"):
        br.tail = "\n" + (br.tail or "")
    code_lines = []
    for pre in main.xpath(".//pre[not(ancestor::pre)]"):
        code_lines += [line.rstrip() for line in pre.text_content().split("\n") if line.strip()]
    return code_lines


def _rows(main: Any) -> list[list[str]]:
    """Every table row with text: its non-empty cells."""
    rows = []
    for row in main.xpath(".//tr"):
        cells = [norm(cell.text_content()) for cell in row.xpath("./td|./th")]
        if any(cells):
            rows.append([cell for cell in cells if cell])
    return rows


def _headings(main: Any) -> list[tuple[int, str]]:
    """Every heading with text: its level and its text, less permalink marks."""
    headings = []
    for heading in main.xpath(".//h1|.//h2|.//h3|.//h4|.//h5|.//h6"):
        text = norm(heading.text_content()).strip(PERMALINK_MARKS + " ")
        if text:
            headings.append((int(heading.tag[1]), text))
    return headings


def _links(main: Any, base: str) -> list[str]:
    """Every relative link with text (not a heading's link to itself), resolved against `base`."""
    links = []
    for anchor in main.xpath(".//a[@href]"):
        href = anchor.get("href", "").strip()
        text = norm(anchor.text_content()).strip(PERMALINK_MARKS)
        self_link = href.startswith("#") and anchor.xpath(
            "ancestor::*[self::h1 or self::h2 or self::h3 or self::h4 or self::h5 or self::h6]"
        )
        if href and text and not self_link and not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", href):
            links.append(urljoin(base, href))
    return links


def _output_lines(markdown: str) -> tuple[list[str], list[str]]:
    """(lines inside fenced blocks, less their fence's container prefix; lines outside, less theirs)."""
    inside, outside = [], []
    fence: tuple[str, str] | None = None  # (closing marks, container prefix of the opening line)
    for line in markdown.split("\n"):
        match = _FENCE.match(line)
        if fence is None and match:
            fence = (match.group(2), match.group(1))
            continue
        if fence is not None:
            body = _strip_prefix(line, fence[1])
            if body.strip().startswith(fence[0]) and not body.strip().strip(fence[0][0]):
                fence = None
            else:
                inside.append(body.rstrip())
        else:
            outside.append(_CONTAINER.sub("", line))
    return inside, outside


def _strip_prefix(line: str, prefix: str) -> str:
    """`line` less the container prefix of its fence (quote marks and the indentation a list gives)."""
    quotes = prefix.count(">")
    for _ in range(quotes):
        line = re.sub(r"^ *> ?", "", line, count=1)
    indent = max(0, len(prefix.rsplit(">", 1)[-1]) - 1) if quotes else len(prefix)
    spaces = len(line) - len(line.lstrip(" "))
    return line[min(indent, spaces) :]


def plain(text: str) -> str:
    """Markdown text without link targets, escapes, emphasis and code marks, whitespace collapsed."""
    text = _LINK.sub(r"\1", text)
    text = _ESCAPE.sub(r"\1", text)
    return norm(_MARKS.sub("", text))


def score(markdown: str, expected: Truth) -> Score:
    inside, outside = _output_lines(markdown)
    result = Score(chars=len(markdown))
    available = Counter(inside) + Counter(line.rstrip() for line in outside)
    kept = 0
    missing_code = []
    for line in expected.code_lines:
        if available[line] > 0:
            available[line] -= 1
            kept += 1
        else:
            missing_code.append(line)
    result.code = (kept, len(expected.code_lines))
    flat = plain("\n".join(outside + inside))
    kept = 0
    missing_rows = []
    for row in expected.rows:
        if _row_found(flat, [plain(cell)[:80] for cell in row]):
            kept += 1
        else:
            missing_rows.append(" | ".join(row)[:120])
    result.rows = (kept, len(expected.rows))
    found_headings = []
    for line in outside:
        match = _HEADING.match(line)
        if match:
            text = plain(match.group(2)).strip(PERMALINK_MARKS + " ")
            found_headings.append((len(match.group(1)), text.replace(" ", "")))
            if re.search(r"\[[¶#§🔗]\]\(|[¶🔗]", match.group(2)):
                result.permalinks += 1
    kept = 0
    missing_headings = []
    for level, text in expected.headings:
        want = text.replace(" ", "")
        if any(lv == level and _same_heading(want, got) for lv, got in found_headings):
            kept += 1
        else:
            missing_headings.append(f"h{level} {text}"[:100])
    result.headings = (kept, len(expected.headings))
    kept = sum(1 for link in expected.links if f"]({link})" in markdown or f"](<{link}>)" in markdown)
    result.links = (kept, len(expected.links))
    text = plain(markdown)
    leaked = [nav for nav in expected.navigation if nav in text]
    result.navigation = (len(leaked), len(expected.navigation))
    result.missing = {
        "code": missing_code[:5],
        "rows": missing_rows[:5],
        "headings": missing_headings[:5],
        "navigation": leaked[:5],
    }
    return result


def _same_heading(want: str, got: str) -> bool:
    if want == got:
        return True
    shorter, longer = sorted((want, got), key=len)
    return longer.startswith(shorter) and len(shorter) >= 0.6 * len(longer)


def _row_found(flat: str, cells: list[str]) -> bool:
    """The cells in order, each starting within a short distance of the previous one."""
    position = flat.find(cells[0])
    while position >= 0:
        cursor = position + len(cells[0])
        for cell in cells[1:]:
            found = flat.find(cell, cursor, cursor + 400 + len(cell))
            if found < 0:
                break
            cursor = found + len(cell)
        else:
            return True
        position = flat.find(cells[0], position + 1)
    return False
