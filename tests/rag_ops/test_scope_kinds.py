"""One list of scope kinds (`shared.brain.model.SCOPE_KINDS`): every kind the parsers make is in it, the search's
`types` accepts each, and the tools' schema names each."""

from __future__ import annotations

from mcp_sections.servers.rag_ops.models import NodeType
from mcp_sections.servers.rag_ops.search import _split_types
from mcp_sections.shared.brain.model import SCOPE_KINDS
from mcp_sections.shared.brain.parsing import parse_file
from mcp_sections.shared.brain.parsing.grammars import TREE_SITTER_LANGUAGES
from tests.rag_ops.trees import FILES


def test_the_kinds_the_parsers_make_are_the_kinds_searched_and_described() -> None:
    made = {kind for language in TREE_SITTER_LANGUAGES.values() for kind in language.defs.values()}
    for rel, text in FILES.items():  # a language without its grammar installed is cut into chunks: no scope
        parsed = parse_file("p", rel, text.encode())
        made |= {str(node.props["kind"]) for node in parsed.nodes if node.label == "Scope"}
    assert made and made <= set(SCOPE_KINDS), made - set(SCOPE_KINDS)
    assert _split_types(list(SCOPE_KINDS)) == (["Scope"], set(SCOPE_KINDS))
    description = NodeType.__metadata__[0].description
    assert all(f"{kind}," in description or f"{kind};" in description for kind in SCOPE_KINDS), description
