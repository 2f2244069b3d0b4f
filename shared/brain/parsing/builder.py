"""Graph records of one file in the making (`Builder`), the compact texts that get embedded, and plain-text
chunking for files no parser reads."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from mcp_sections.shared.brain.model import (
    Edge,
    FileRecord,
    Node,
    ParsedFile,
    Ref,
    node_id,
    project_node_id,
    split_identifier,
)
from mcp_sections.shared.brain.parsing.files import (
    CHUNK_CHARS,
    MAX_CHUNKS_PER_FILE,
    MAX_CODE_BLOCK_CHARS,
    MAX_EMBED_CHARS,
    MAX_REFS_PER_SCOPE,
    MAX_SCOPE_CHARS,
    TRIVIAL_LINES,
)
from mcp_sections.shared.brain.parsing.prose import inline_text

DOCSTRING_WORDS_CHARS = 400
WHOLE = ("block", "route")  # scopes without parameters: module-level code, a route registration

# ---- parsing ---------------------------------------------------------------------------------------


class Builder:
    """Collects the nodes, edges and references of one file."""

    def __init__(self, project_id: str, rel: str, language: str, data_hash: str, size: int, mtime_ns: int) -> None:
        self.project_id = project_id
        self.rel = rel
        self.language = language
        self.file_id = node_id(project_id, "File", rel)
        self.record = FileRecord(rel, data_hash, size, mtime_ns, self.file_id)
        self.file = Node(
            id=self.file_id,
            label="File",
            project_id=project_id,
            name=posixpath.basename(rel),
            path=rel,
            file_id=self.file_id,
            keywords=" ".join(split_identifier(rel)),
            props={"language": language, "hash": data_hash, "size": size},
        )
        self.nodes: list[Node] = [self.file]
        self.edges: list[Edge] = [Edge(self.file_id, "IN_PROJECT", project_node_id(project_id))]
        self.refs: list[Ref] = []
        self._seen: set[str] = set()

    def unique(self, qualname: str) -> str:
        candidate, n = qualname, 1
        while candidate in self._seen:
            n += 1
            candidate = f"{qualname}#{n}"
        self._seen.add(candidate)
        return candidate

    def scope(
        self,
        *,
        parent: str,
        kind: str,
        name: str,
        qualname: str,
        signature: str,
        docstring: str,
        start: int,
        end: int,
        content: str,
        calls: Sequence[str] = (),
        detail: str | None = None,
    ) -> str:
        """A definition (or a module-level block) as a Scope node under `parent`; `detail` is what is embedded after
        its header when it has no docstring (by default its first lines), and makes it embedded however short."""
        qualname = self.unique(qualname)
        sid = node_id(self.project_id, "Scope", self.rel, qualname)
        doc = docstring.strip()
        lines = content.splitlines()
        embed = None
        if doc or detail or len(lines) > TRIVIAL_LINES:  # trivial undocumented scopes: text search only
            embed = compact_embed_text(self.rel, kind, qualname, signature, doc, lines, detail)
        self.nodes.append(
            Node(
                id=sid,
                label="Scope",
                project_id=self.project_id,
                name=name,
                path=self.rel,
                file_id=self.file_id,
                start_line=start,
                end_line=end,
                content=content[:MAX_SCOPE_CHARS],
                keywords=" ".join(
                    [qualname, *split_identifier(qualname), *split_identifier(signature)[:30], docstring_words(doc)]
                ),
                embed_text=embed,
                props={
                    "kind": kind,
                    "qualname": qualname,
                    "signature": signature[:300],
                    "docstring": doc[:1000],
                    "language": self.language,
                    "parent": None if parent == self.file_id else parent,
                },
            )
        )
        self.edges.append(Edge(parent, "DEFINES", sid))
        for call in list(dict.fromkeys(c for c in calls if c and c != name))[:MAX_REFS_PER_SCOPE]:
            self.refs.append(Ref(sid, "call", call))
        return sid

    def imports(self, targets: Sequence[str]) -> None:
        unique = list(dict.fromkeys(t for t in targets if t))
        self.file.props["imports"] = unique[:200]
        for target in unique[:200]:
            self.refs.append(Ref(self.file_id, "import", target))

    def done(self) -> ParsedFile:
        summary = self.file.props.pop("summary", "")
        if summary:
            self.file.content = summary[:2000]
            self.file.embed_text = f"{posixpath.basename(self.rel)}: {first_paragraph(summary)}"[:MAX_EMBED_CHARS]
        return ParsedFile(self.record, self.nodes, self.edges, self.refs)


def docstring_words(doc: str) -> str:
    """The words of a docstring's first paragraphs (text search weighs them above the code's body)."""
    return " ".join(inline_text(doc).split())[:DOCSTRING_WORDS_CHARS]


def first_paragraph(text: str, limit: int = 160) -> str:
    paragraph = text.strip().split("\n\n", 1)[0]
    return " ".join(paragraph.split())[:limit]


def compact_embed_text(
    rel: str, kind: str, qualname: str, signature: str, doc: str, lines: Sequence[str], detail: str | None = None
) -> str:
    """`passwords.py method LoginService.login(self, user, password): Log a user in ...` (≤ MAX_EMBED_CHARS): the
    parameters by name (a Python signature's annotations and defaults left out; none for a block or a route, which
    take none: `orders.js route router.delete /:id`), then the docstring's first paragraph as its words read (inline
    markup dropped), else `detail`, else the first lines of the body."""
    python = rel.endswith((".py", ".pyi"))
    header = f"{posixpath.basename(rel)} {kind} {qualname}{'' if kind in WHOLE else parameters(signature, python)}"
    if doc:
        detail = first_paragraph(inline_text(doc), MAX_EMBED_CHARS)
    elif not detail:
        detail = " ".join(" ".join(line.split()) for line in lines[1:4] if line.strip())[:100]
    return f"{header}: {detail}"[:MAX_EMBED_CHARS]


def parameters(signature: str, python: bool) -> str:
    """`(a, b, *args)` of a signature: Python's by name alone, other languages' as written (at most 70 characters)."""
    start = signature.find("(")
    if start < 0:
        return ""
    if not python:
        return signature[start:][:70]
    depth, current, names = 0, "", []
    for char in signature[start + 1 :]:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                break
            depth -= 1
        if char == "," and depth == 0:
            names.append(current)
            current = ""
        else:
            current += char
    names.append(current)
    cleaned = [re.split(r"[:=]", name, maxsplit=1)[0].strip() for name in names]
    return f"({', '.join(name for name in cleaned if name)})"[:70]


@dataclass(frozen=True)
class Statement:
    """A top-level statement as the module-level blocks see it: its lines (1-based, inclusive) and its role. `code`
    goes in a block (its name drawn from its code, the names it calls); a `comment` goes in the block of the code
    after it (`doc`: its text, the block's docstring when it sits right above that code); a `boundary` (a
    definition, an import, the file's own summary) ends the block before it and takes the comments above it."""

    start: int
    end: int
    role: Literal["code", "comment", "boundary"] = "code"
    name: str | None = None
    calls: tuple[str, ...] = ()
    doc: str = ""


def module_blocks(builder: Builder, lines: Sequence[str], statements: Sequence[Statement]) -> None:
    """The top-level code outside every definition as `block` scopes: runs of consecutive statements that are
    neither definitions nor imports, a run cut once it reaches CHUNK_CHARS (a statement is never cut), each named
    after its first statement (`app`, `module.exports`, `ITERATIONS`, else `block@L12`)."""
    run: list[Statement] = []
    pending: list[Statement] = []  # comments waiting for what follows them
    for statement in statements:
        if statement.role == "comment":
            pending.append(statement)
            continue
        if statement.role == "boundary":
            _block(builder, lines, run)
            run, pending = [], []
            continue
        run += [*pending, statement]
        pending = []
        if sum(len(line) + 1 for line in lines[run[0].start - 1 : statement.end]) >= CHUNK_CHARS:
            _block(builder, lines, run)
            run = []
    _block(builder, lines, [*run, *pending] if run else [])


def _block(builder: Builder, lines: Sequence[str], run: Sequence[Statement]) -> None:
    """One run of top-level statements as a `block` scope (nothing for a run without code)."""
    code = [statement for statement in run if statement.role == "code"]
    if not code:
        return
    first = code[0]
    above: list[str] = []  # the comments right above the first code
    row = first.start
    for statement in reversed(run[: run.index(first)]):
        if statement.end < row - 1:
            break
        above.insert(0, statement.doc)
        row = statement.start
    start, end = run[0].start, run[-1].end
    name = first.name or f"block@L{first.start}"
    builder.scope(
        parent=builder.file_id,
        kind="block",
        name=name,
        qualname=name,
        signature=lines[first.start - 1].strip()[:200] if first.start - 1 < len(lines) else "",
        docstring="\n".join(text for text in above if text),
        start=start,
        end=end,
        content="\n".join(lines[start - 1 : end]),
        calls=[call for statement in code for call in statement.calls],
    )


def chunk_text(builder: Builder, text: str, *, prose: bool) -> None:
    """Chunks of about CHUNK_CHARS on line boundaries."""
    chunks, current = [], []
    size = 0
    start_line = 1
    line_no = 0
    for line_no, line in enumerate(text.splitlines(), start=1):
        current.append(line)
        size += len(line) + 1
        if size >= CHUNK_CHARS:
            chunks.append((start_line, line_no, "\n".join(current)))
            current, size, start_line = [], 0, line_no + 1
    if current and "".join(current).strip():
        chunks.append((start_line, line_no, "\n".join(current)))
    _add_chunks(builder, chunks, prose=prose)


def chunk_markdown(builder: Builder, text: str) -> None:
    """Chunks of whole markdown blocks, about CHUNK_CHARS each; a code block stays whole in one chunk up to
    MAX_CODE_BLOCK_CHARS (longer ones are cut at line ends, each part fenced)."""
    from mcp_sections.shared.text.markdown_blocks import pieces

    _add_chunks(builder, pieces(text, CHUNK_CHARS, MAX_CODE_BLOCK_CHARS), prose=True)


def _add_chunks(builder: Builder, chunks: Sequence[tuple[int, int, str]], *, prose: bool) -> None:
    for index, (start, end, content) in enumerate(chunks[:MAX_CHUNKS_PER_FILE]):
        cid = node_id(builder.project_id, "Chunk", builder.rel, str(index))
        builder.nodes.append(
            Node(
                id=cid,
                label="Chunk",
                project_id=builder.project_id,
                name=f"{builder.file.name}#{index}",
                path=builder.rel,
                file_id=builder.file_id,
                start_line=start,
                end_line=end,
                content=content,
                embed_text=" ".join(content.split())[:MAX_EMBED_CHARS] if prose and content.strip() else None,
                props={"index": index},
            )
        )
        builder.edges.append(Edge(builder.file_id, "CONTAINS", cid))
