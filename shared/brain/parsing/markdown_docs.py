"""Documents in sections: Markdown split by ATX headings (fenced code ignored), reStructuredText by its underlined
(and overlined) titles, and the links between documents.

Both give the same records: a `DocumentSection` per heading, named by its title, nested by level (`heading_path`
"Options > Multiple Options"), holding the text up to the next heading, and embedded as its heading path and the
start of its prose (reStructuredText directives and comments left out of what is embedded); the text before the
first heading becomes plain chunks.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence

from mcp_sections.shared.brain.model import (
    Edge,
    Node,
    Ref,
    node_id,
    split_identifier,
)
from mcp_sections.shared.brain.parsing.builder import Builder, chunk_text
from mcp_sections.shared.brain.parsing.files import MAX_EMBED_CHARS, MAX_SCOPE_CHARS
from mcp_sections.shared.brain.parsing.prose import inline_text

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")
_LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_RST_LINK = re.compile(r"`[^`<]*<(https?://[^>\s]+)>`_")
_RST_ADORNMENT = re.compile(r"""^([!-/:-@\[-`{-~])\1{2,}[ \t]*$""")
"""A line of one repeated punctuation character (at least three): a title's underline or overline."""
_RST_SKIPPED = re.compile(r"^\s*(?:\.\.\s|:[\w.+-]+:(?:\s|$))")
"""Lines whose text is markup, not prose: directives, comments, targets, and field or directive options."""


# (level, title, first line of the heading, first line of its body), 0-based line indexes
Heading = tuple[int, str, int, int]


def parse_markdown(builder: Builder, text: str) -> None:
    lines = text.splitlines()
    headings: list[Heading] = []
    in_fence = False
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            match = _HEADING.match(line)
            if match:
                headings.append((len(match.group(1)), match.group(2).strip(), index, index + 1))
    _sections(builder, lines, headings, _markdown_links, inline_text)


def parse_rst(builder: Builder, text: str) -> None:
    """reStructuredText: a title is a line under a blank line (or an overline), underlined with a line of one
    punctuation character at least as long; levels follow the order in which each adornment style first appears."""
    lines = text.splitlines()
    headings: list[Heading] = []
    styles: list[tuple[str, bool]] = []
    index = 1
    while index < len(lines):
        found = _rst_title(lines, index)
        if found is None:
            index += 1
            continue
        title, start, style = found
        if style not in styles:
            styles.append(style)
        headings.append((styles.index(style) + 1, title, start, index + 1))
        index += 2
    _sections(builder, lines, headings, _rst_links, _rst_prose)


def _rst_title(lines: Sequence[str], index: int) -> tuple[str, int, tuple[str, bool]] | None:
    """(title, first line, (adornment character, overlined)) when line `index` underlines the line above it."""
    underline, title = lines[index].rstrip(), lines[index - 1]
    if not _RST_ADORNMENT.match(underline) or not title.strip() or title[0].isspace():
        return None
    if _RST_ADORNMENT.match(title.rstrip()) or len(underline) < len(title.rstrip()):
        return None
    overlined = index >= 2 and lines[index - 2].rstrip() == underline
    if not overlined and index >= 2 and lines[index - 2].strip():
        return None  # the last line of a paragraph, not a title
    return title.strip(), index - 2 if overlined else index - 1, (underline[0], overlined)


def _rst_prose(body: str) -> str:
    """The prose of a reStructuredText body: markup lines dropped, inline markup as its text (`prose.inline_text`)."""
    return inline_text("\n".join(line for line in body.splitlines() if not _RST_SKIPPED.match(line)))


def _sections(
    builder: Builder,
    lines: list[str],
    headings: list[Heading],
    links: Callable[[Builder, str, str], list[Ref]],
    prose: Callable[[str], str],
) -> None:
    first = headings[0][2] if headings else len(lines)
    preamble = "\n".join(lines[:first])
    if preamble.strip():
        sub = Builder(builder.project_id, builder.rel, builder.language, "", 0, 0)
        sub.nodes = []
        sub.edges = []
        chunk_text(sub, preamble, prose=True)
        builder.nodes += sub.nodes
        builder.edges += [Edge(builder.file_id, "CONTAINS", n.id) for n in sub.nodes]
        builder.refs += links(builder, sub.nodes[0].id if sub.nodes else builder.file_id, preamble)
    if headings:
        builder.file.props["summary"] = prose(headings[0][1])
    stack: list[tuple[int, str, str]] = []  # (level, node id, heading path)
    made: list[Node] = []
    children: set[str] = set()  # the sections that hold sub-sections
    for position, (level, title, start, body_start) in enumerate(headings):
        end = headings[position + 1][2] if position + 1 < len(headings) else len(lines)
        while stack and stack[-1][0] >= level:
            stack.pop()
        parent_id = stack[-1][1] if stack else builder.file_id
        shown = " ".join(prose(title).split())
        heading_path = f"{stack[-1][2]} > {shown}" if stack else shown
        qualname = builder.unique(heading_path)
        sid = node_id(builder.project_id, "DocumentSection", builder.rel, qualname)
        body = "\n".join(lines[body_start:end]).strip()
        words = " ".join(prose(body).split())
        children.add(parent_id)
        made.append(
            Node(
                id=sid,
                label="DocumentSection",
                project_id=builder.project_id,
                name=title[:200],
                path=builder.rel,
                file_id=builder.file_id,
                start_line=start + 1,
                end_line=end,
                content="\n".join(lines[start:end])[:MAX_SCOPE_CHARS],
                keywords=" ".join(split_identifier(heading_path)),
                embed_text=f"{heading_path[:100]}: {words}"[:MAX_EMBED_CHARS] if words else None,
                props={"level": level, "heading_path": heading_path[:500]},
            )
        )
        builder.edges.append(Edge(parent_id, "CONTAINS", sid))
        builder.refs += links(builder, sid, body)
        stack.append((level, sid, heading_path))
    for node in made:  # a title whose text is all in its sub-sections: embedded as what it is about, its heading
        if node.embed_text is None and node.id in children:
            node.embed_text = str(node.props["heading_path"])[:MAX_EMBED_CHARS]
    builder.nodes += made


def _markdown_links(builder: Builder, source: str, text: str) -> list[Ref]:
    refs = []
    for target in _LINK.findall(text):
        if target.startswith(("http://", "https://")):
            refs.append(Ref(source, "link", target.split("#", 1)[0]))
        elif not target.startswith(("#", "mailto:")) and "://" not in target:
            path = target.split("#", 1)[0].split("?", 1)[0]
            if path:
                resolved = posixpath.normpath(posixpath.join(posixpath.dirname(builder.rel), path))
                if not resolved.startswith(".."):
                    refs.append(Ref(source, "link", resolved))
    return refs[:200]


def _rst_links(builder: Builder, source: str, text: str) -> list[Ref]:
    return [Ref(source, "link", target.split("#", 1)[0]) for target in _RST_LINK.findall(text)][:200]
