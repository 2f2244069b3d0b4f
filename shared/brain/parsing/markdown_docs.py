"""Markdown: sections split by ATX headings (fenced code ignored) and the links between documents."""

from __future__ import annotations

import posixpath
import re

from mcp_sections.shared.brain.model import (
    Edge,
    Node,
    Ref,
    node_id,
    split_identifier,
)
from mcp_sections.shared.brain.parsing.builder import Builder, chunk_text
from mcp_sections.shared.brain.parsing.files import MAX_EMBED_CHARS, MAX_SCOPE_CHARS

# ---- Markdown ----------------------------------------------------------------------------------------

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")
_LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def parse_markdown(builder: Builder, text: str) -> None:
    lines = text.splitlines()
    sections: list[tuple[int, str, int]] = []  # (level, title, line index)
    in_fence = False
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            match = _HEADING.match(line)
            if match:
                sections.append((len(match.group(1)), match.group(2).strip(), index))
    first = sections[0][2] if sections else len(lines)
    preamble = "\n".join(lines[:first])
    if preamble.strip():
        sub = Builder(builder.project_id, builder.rel, builder.language, "", 0, 0)
        sub.nodes = []
        sub.edges = []
        chunk_text(sub, preamble, prose=True)
        builder.nodes += sub.nodes
        builder.edges += [Edge(builder.file_id, "CONTAINS", n.id) for n in sub.nodes]
        builder.refs += _links(builder, sub.nodes[0].id if sub.nodes else builder.file_id, preamble)
    if sections:
        builder.file.props["summary"] = sections[0][1]
    stack: list[tuple[int, str, str]] = []  # (level, node id, heading path)
    for position, (level, title, start) in enumerate(sections):
        end = sections[position + 1][2] if position + 1 < len(sections) else len(lines)
        while stack and stack[-1][0] >= level:
            stack.pop()
        parent_id = stack[-1][1] if stack else builder.file_id
        heading_path = f"{stack[-1][2]} > {title}" if stack else title
        qualname = builder.unique(heading_path)
        sid = node_id(builder.project_id, "DocumentSection", builder.rel, qualname)
        content = "\n".join(lines[start:end])
        body = "\n".join(lines[start + 1 : end]).strip()
        builder.nodes.append(
            Node(
                id=sid,
                label="DocumentSection",
                project_id=builder.project_id,
                name=title[:200],
                path=builder.rel,
                file_id=builder.file_id,
                start_line=start + 1,
                end_line=end,
                content=content[:MAX_SCOPE_CHARS],
                keywords=" ".join(split_identifier(heading_path)),
                embed_text=f"{heading_path[:100]}: {' '.join(body.split())}"[:MAX_EMBED_CHARS] if body else None,
                props={"level": level, "heading_path": heading_path[:500]},
            )
        )
        builder.edges.append(Edge(parent_id, "CONTAINS", sid))
        builder.refs += _links(builder, sid, body)
        stack.append((level, sid, heading_path))


def _links(builder: Builder, source: str, text: str) -> list[Ref]:
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
