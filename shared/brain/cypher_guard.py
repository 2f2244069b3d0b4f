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


_SEMICOLON = Token("symbol", ";")
_DOT = Token("symbol", ".")
_OPENING = Token("symbol", "(")
#: A word followed by another that makes a clause run_cypher refuses, and why.
_REFUSED_PAIRS = {
    ("load", "csv"): "LOAD CSV reads files and URLs",
    ("periodic", "commit"): "PERIODIC COMMIT writes in batches",
    ("in", "transactions"): "CALL { ... } IN TRANSACTIONS commits on its own",
    ("in", "concurrent"): "CALL { ... } IN TRANSACTIONS commits on its own",
}


def tokenize(query: str) -> list[Token]:
    """Cypher tokens without comments and whitespace; INVALID_INPUT for an unterminated string/name/comment."""
    tokens: list[Token] = []
    index = 0
    while index < len(query):
        token, index = _next_token(query, index)
        if token is not None:
            tokens.append(token)
    return tokens


def _next_token(query: str, index: int) -> tuple[Token | None, int]:
    """The token that starts at `index` (None for whitespace or a comment) and the index after it."""
    char = query[index]
    if char.isspace():
        return None, index + 1
    if query.startswith("//", index):
        end = query.find("\n", index)
        return None, len(query) if end == -1 else end + 1
    if query.startswith("/*", index):
        end = query.find("*/", index + 2)
        if end == -1:
            raise _invalid("a /* comment is not closed")
        return None, end + 2
    if char in "'\"":
        return _string(query, index)
    if char == "`":
        return _quoted_name(query, index)
    if char.isalpha() or char in "_$":
        end = _end_of_run(query, index + 1, "_$")
        return Token("word", query[index:end].lower()), end
    if char.isdigit():
        end = _end_of_run(query, index + 1, ".")
        return Token("number", query[index:end]), end
    return Token("symbol", char), index + 1


def _end_of_run(query: str, index: int, also: str) -> int:
    """The index after the letters, digits and characters of `also` that start at `index`."""
    while index < len(query) and (query[index].isalnum() or query[index] in also):
        index += 1
    return index


def _string(query: str, index: int) -> tuple[Token, int]:
    """The string quoted by the character at `index` (a backslash escapes the next character)."""
    quote, end = query[index], index + 1
    while end < len(query) and query[end] != quote:
        end += 2 if query[end] == "\\" else 1
    if end >= len(query):
        raise _invalid("a string is not closed")
    return Token("string", query[index + 1 : end]), end + 1


def _quoted_name(query: str, index: int) -> tuple[Token, int]:
    """The `backtick`-quoted name at `index`, lower-cased; a doubled backtick is a backtick inside the name."""
    name, end = [], index + 1
    while True:
        close = query.find("`", end)
        if close == -1:
            raise _invalid("a `quoted` name is not closed")
        name.append(query[end:close])
        if not query.startswith("``", close):
            return Token("quoted", "".join(name).lower()), close + 1
        name.append("`")
        end = close + 2


def check_read_query(query: str) -> None:
    """Refuse what run_cypher never runs (see the module docstring); INVALID_INPUT or PERMISSION_DENIED."""
    if not query.strip():
        raise _invalid("the query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise ToolFailure(
            ErrorCode.MAX_LIMIT_EXCEEDED, f"the query is {len(query)} characters; the limit is {MAX_QUERY_CHARS}."
        )
    tokens = tokenize(query)
    while tokens and tokens[-1] == _SEMICOLON:
        tokens.pop()
    for position in range(len(tokens)):
        _check_clause(tokens, position)
    for position in range(len(tokens)):
        _check_function(tokens, position)


def _check_clause(tokens: list[Token], position: int) -> None:
    """Refuse a second statement, a clause that writes or reads outside the brain, a procedure not on the list."""
    token = tokens[position]
    following = tokens[position + 1] if position + 1 < len(tokens) else None
    if token == _SEMICOLON:
        raise _denied("one statement per call: remove the `;` and send the second query in its own call")
    if token.kind != "word":
        return
    refused = _REFUSED_PAIRS.get((token.text, following.text)) if following is not None else None
    if refused is not None:
        raise _denied(refused)
    batched = any(item.text == "transactions" for item in tokens[position + 2 : position + 4])
    if token.text == "in" and following is not None and following.kind == "number" and batched:
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


def _check_function(tokens: list[Token], position: int) -> None:
    """Refuse a call of a namespaced function (`a.b(...)`) outside SAFE_FUNCTION_NAMESPACES."""
    token = tokens[position]
    if not token.is_name() or (position > 0 and tokens[position - 1] in (_DOT,)):
        return
    if position > 0 and tokens[position - 1].text == "call":
        return
    name, end = _dotted_name(tokens, position)
    if "." in name and end < len(tokens) and tokens[end] == _OPENING:
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
    while index + 1 < len(tokens) and tokens[index] == _DOT and tokens[index + 1].is_name():
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
