"""What a caller's Cypher may do in `run_cypher`, decided on tokens, not on text patterns.

A text deny-list is walked past by quoting (``CALL `apoc`.`load`.json(...)``), comments (`LOAD/**/CSV`) or
spacing (`apoc . load`). So the query is tokenized the way Cypher reads it — strings, comments, backtick-quoted
names (with their doubled-backtick escape) — and then:

- every procedure (`CALL a.b.c`, however its parts are quoted or spaced) must be on READ_PROCEDURES;
- every namespaced function (`a.b(...)`) must live in a namespace of SAFE_FUNCTION_NAMESPACES (the temporal,
  spatial and vector built-ins), so `apoc.*`, `dbms.*` or a plugin's functions never run;
- `LOAD CSV`, `CALL {...} IN TRANSACTIONS`, `PERIODIC COMMIT`, `USE` (another database) and a second statement
  after `;` are refused.

Writes are left to the two layers after this one, which know better than any parser: the server's own plan
(`EXPLAIN`, whose query type must be `r`) and a read transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

READ_PROCEDURES = frozenset(
    name.lower()
    for name in (
        "db.labels",
        "db.relationshipTypes",
        "db.propertyKeys",
        "db.schema.visualization",
        "db.schema.nodeTypeProperties",
        "db.schema.relTypeProperties",
        "db.index.fulltext.queryNodes",
        "db.index.fulltext.queryRelationships",
        "db.index.vector.queryNodes",
        "db.index.vector.queryRelationships",
    )
)
SAFE_FUNCTION_NAMESPACES = frozenset(
    {"date", "datetime", "localdatetime", "localtime", "time", "duration", "point", "vector"}
)
MAX_QUERY_CHARS = 20_000


@dataclass(frozen=True)
class Token:
    kind: str  # "word" (keyword or name), "quoted" (a `backtick` name), "string", "number", "symbol"
    text: str  # words lower-cased; quoted names unquoted

    def is_name(self) -> bool:
        return self.kind in ("word", "quoted")


def tokenize(query: str) -> list[Token]:
    """Cypher tokens without comments and whitespace; INVALID_INPUT for an unterminated string/name/comment."""
    tokens: list[Token] = []
    index, length = 0, len(query)
    while index < length:
        char = query[index]
        if char.isspace():
            index += 1
        elif query.startswith("//", index):
            end = query.find("\n", index)
            index = length if end == -1 else end + 1
        elif query.startswith("/*", index):
            end = query.find("*/", index + 2)
            if end == -1:
                raise _invalid("a /* comment is not closed")
            index = end + 2
        elif char in "'\"":
            end = index + 1
            while end < length and query[end] != char:
                end += 2 if query[end] == "\\" else 1
            if end >= length:
                raise _invalid("a string is not closed")
            tokens.append(Token("string", query[index + 1 : end]))
            index = end + 1
        elif char == "`":
            name, end = [], index + 1
            while True:
                close = query.find("`", end)
                if close == -1:
                    raise _invalid("a `quoted` name is not closed")
                name.append(query[end:close])
                if query.startswith("``", close):  # a doubled backtick is a backtick inside the name
                    name.append("`")
                    end = close + 2
                    continue
                break
            tokens.append(Token("quoted", "".join(name).lower()))
            index = close + 1
        elif char.isalpha() or char in "_$":
            end = index + 1
            while end < length and (query[end].isalnum() or query[end] in "_$"):
                end += 1
            tokens.append(Token("word", query[index:end].lower()))
            index = end
        elif char.isdigit():
            end = index + 1
            while end < length and (query[end].isalnum() or query[end] == "."):
                end += 1
            tokens.append(Token("number", query[index:end]))
            index = end
        else:
            tokens.append(Token("symbol", char))
            index += 1
    return tokens


def check_read_query(query: str) -> None:
    """Refuse what run_cypher never runs (see the module docstring); INVALID_INPUT or PERMISSION_DENIED."""
    if not query.strip():
        raise _invalid("the query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise ToolFailure(
            ErrorCode.MAX_LIMIT_EXCEEDED, f"the query is {len(query)} characters; the limit is {MAX_QUERY_CHARS}."
        )
    tokens = tokenize(query)
    while tokens and tokens[-1] == Token("symbol", ";"):
        tokens.pop()
    for position, token in enumerate(tokens):
        following = tokens[position + 1] if position + 1 < len(tokens) else None
        if token == Token("symbol", ";"):
            raise _denied("one statement per call: remove the `;` and send the second query in its own call")
        if token.kind != "word":
            continue
        if token.text == "load" and following is not None and following.text == "csv":
            raise _denied("LOAD CSV reads files and URLs")
        if token.text == "periodic" and following is not None and following.text == "commit":
            raise _denied("PERIODIC COMMIT writes in batches")
        if token.text == "in" and following is not None and following.text in ("transactions", "concurrent"):
            raise _denied("CALL { ... } IN TRANSACTIONS commits on its own")
        if token.text == "in" and following is not None and following.kind == "number":
            after = tokens[position + 2 : position + 4]
            if any(item.text == "transactions" for item in after):
                raise _denied("CALL { ... } IN TRANSACTIONS commits on its own")
        if token.text == "use" and position == 0:
            raise _denied("USE switches to another database; the brain is the only one run_cypher reads")
        if token.text == "call" and following is not None and following.is_name():
            name, _ = _dotted_name(tokens, position + 1)
            if name not in READ_PROCEDURES:
                raise _denied(
                    f"procedure {name!r} is not on run_cypher's list of read procedures "
                    f"({', '.join(sorted(READ_PROCEDURES))})"
                )
    for position, token in enumerate(tokens):
        if not token.is_name() or (position > 0 and tokens[position - 1] in (Token("symbol", "."),)):
            continue
        if position > 0 and tokens[position - 1].text == "call":
            continue
        name, end = _dotted_name(tokens, position)
        if "." in name and end < len(tokens) and tokens[end] == Token("symbol", "("):
            namespace = name.split(".", 1)[0]
            if namespace not in SAFE_FUNCTION_NAMESPACES:
                raise _denied(
                    f"function {name!r} is not allowed in run_cypher: only built-in functions and the "
                    f"{', '.join(sorted(SAFE_FUNCTION_NAMESPACES))} namespaces are"
                )


def _dotted_name(tokens: list[Token], start: int) -> tuple[str, int]:
    """`a . b . c` (parts quoted or not) from `start`: the lower-cased dotted name and the index after it."""
    parts = [tokens[start].text]
    index = start + 1
    while index + 1 < len(tokens) and tokens[index] == Token("symbol", ".") and tokens[index + 1].is_name():
        parts.append(tokens[index + 1].text)
        index += 2
    return ".".join(parts), index


def _invalid(why: str) -> ToolFailure:
    return ToolFailure(ErrorCode.INVALID_INPUT, f"run_cypher could not read the query: {why}; fix it and call again.")


def _denied(why: str) -> ToolFailure:
    return ToolFailure(
        ErrorCode.PERMISSION_DENIED,
        f"run_cypher runs read-only queries on the brain only: {why}. Use the brain's other tools "
        "(query_entities, explore_relationships, brain_search) for anything else.",
    )
