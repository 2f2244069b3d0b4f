"""Parsers (ast + tree-sitter + markdown) and the filtered walk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_sections.shared.brain.parsing import WalkStats, parse_file, tree_sitter_available, walk_tree
from mcp_sections.shared.text.gitignore import is_ignored, parse_gitignore
from tests.rag_ops.trees import EXPECTED_FILES, FILES, make_tree

needs_tree_sitter = pytest.mark.skipif(
    not all(tree_sitter_available().values()), reason="tree-sitter grammars not installed (pip install '.[rag]')"
)


def scopes(rel: str) -> dict[str, dict]:
    parsed = parse_file("p", rel, FILES[rel].encode())
    return {
        n.props["qualname"]: {"kind": n.props["kind"], **n.props, "lines": (n.start_line, n.end_line)}
        for n in parsed.nodes
        if n.label == "Scope"
    }


def test_python_scopes_signatures_docstrings_and_calls() -> None:
    parsed = parse_file("p", "auth/passwords.py", FILES["auth/passwords.py"].encode())
    by_name = {n.props.get("qualname"): n for n in parsed.nodes if n.label == "Scope"}
    assert {"hash_password", "verify_password", "LoginService", "LoginService.login", "ITERATIONS"} <= set(by_name)
    login = by_name["LoginService.login"]
    assert login.props["kind"] == "method" and login.props["signature"].startswith("def login(self, user: str")
    assert "issue a session token" in login.props["docstring"]
    assert login.embed_text and "LoginService.login" in login.embed_text and len(login.embed_text) <= 512
    calls = {r.target for r in parsed.refs if r.src == login.id and r.kind == "call"}
    assert {"verify_password", "issue_token"} <= calls
    imports = {r.target for r in parsed.refs if r.kind == "import"}
    assert {"hashlib", "hmac", "auth.tokens"} <= imports
    assert parsed.nodes[0].props["module"] == "auth.passwords"
    assert by_name["ITERATIONS"].props["kind"] == "block"
    # deterministic ids
    again = parse_file("p", "auth/passwords.py", FILES["auth/passwords.py"].encode())
    assert [n.id for n in again.nodes] == [n.id for n in parsed.nodes]


@needs_tree_sitter
@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        (
            "web/server.js",
            {"startServer": "function", "handleRequest": "function", "Router": "class", "Router.route": "method"},
        ),
        ("web/cart.ts", {"LineItem": "interface", "cartTotal": "function", "Cart": "class", "Cart.add": "method"}),
        ("svc/queue.go", {"Queue": "type", "Queue.Push": "method", "Drain": "function"}),
        ("engine/src/lib.rs", {"circle_area": "function", "Point": "struct", "Point.distance": "method"}),
        ("billing/src/main/java/com/shop/Billing.java", {"Billing": "class", "Billing.applyDiscount": "method"}),
    ],
)
def test_tree_sitter_languages(rel: str, expected: dict[str, str]) -> None:
    found = scopes(rel)
    for qualname, kind in expected.items():
        assert qualname in found, (qualname, sorted(found))
        assert found[qualname]["kind"] == kind
    docs = {q: s["docstring"] for q, s in found.items()}
    if rel.endswith(".go"):
        assert "appends a job" in docs["Queue.Push"]
    if rel.endswith(".java"):
        assert "percentage discount" in docs["Billing.applyDiscount"]
    if rel.endswith(".ts"):
        assert "total price" in docs["cartTotal"]
        assert found["cartTotal"]["signature"].startswith("function cartTotal(items: LineItem[]")


def test_markdown_sections_and_links() -> None:
    parsed = parse_file("p", "docs/guide.md", FILES["docs/guide.md"].encode())
    sections = [n for n in parsed.nodes if n.label == "DocumentSection"]
    assert [s.props["heading_path"] for s in sections] == [
        "User guide",
        "User guide > Installation",
        "User guide > Deployment",
    ]
    assert next(n for n in parsed.nodes if n.label == "Chunk").content.startswith("Intro text")
    links = {r.target for r in parsed.refs if r.kind == "link"}
    assert links == {"auth/tokens.py", "https://example.com/docs"}
    contains = {(e.src, e.dst) for e in parsed.edges if e.type == "CONTAINS"}
    assert (sections[0].id, sections[1].id) in contains


RST_PAGE = """\
.. _options:

=======
Options
=======

.. currentmodule:: click

Adding options to commands can be accomplished by the :func:`option` decorator.

Multiple Options
----------------

Similarly to ``nargs``, an option may be given *several times*; see `the guide <https://example.com/guide>`_.

.. click:example::

    @click.option('--message', '-m', multiple=True)

Counting
~~~~~~~~

Some options count.

Transitions are not titles:

----------

Prompting
---------

The end.
"""


def test_restructuredtext_pages_are_cut_into_named_sections() -> None:
    parsed = parse_file("p", "docs/options.rst", RST_PAGE.encode())
    sections = [n for n in parsed.nodes if n.label == "DocumentSection"]
    assert [(s.props["level"], s.props["heading_path"]) for s in sections] == [
        (1, "Options"),
        (2, "Options > Multiple Options"),
        (3, "Options > Multiple Options > Counting"),
        (2, "Options > Prompting"),
    ]
    lines = RST_PAGE.splitlines()
    multiple = sections[1]
    assert lines[multiple.start_line - 1] == "Multiple Options" and lines[multiple.end_line] == "Counting"
    assert sections[0].start_line == 3  # the overline belongs to the title
    # what is embedded: the heading path and the prose, without directives or inline markup
    assert multiple.embed_text == (
        "Options > Multiple Options: Similarly to nargs, an option may be given several times; see the guide. "
        "@click.option('--message', '-m', multiple=True)"
    )
    assert "currentmodule" not in (sections[0].embed_text or "") and "option decorator" in sections[0].embed_text
    assert {r.target for r in parsed.refs if r.kind == "link"} == {"https://example.com/guide"}
    contains = {(e.src, e.dst) for e in parsed.edges if e.type == "CONTAINS"}
    assert (multiple.id, sections[2].id) in contains and (sections[0].id, sections[3].id) in contains
    assert [n.label for n in parsed.nodes if n.label == "Chunk"] == ["Chunk"]  # the label before the title
    # a title whose text is all in its sub-sections is embedded as its heading
    guide = parse_file("p", "docs/upgrading.md", b"# Upgrading\n\n## Upgrading to 3.0\n\n### Strict\n\nAlways.\n")
    assert [n.embed_text for n in guide.nodes if n.label == "DocumentSection"] == [
        "Upgrading",
        "Upgrading > Upgrading to 3.0",
        "Upgrading > Upgrading to 3.0 > Strict: Always.",
    ]


def test_embedded_text_of_a_python_definition_reads_its_docstring_as_words() -> None:
    source = (
        "def load(self, data: typing.Mapping[str, typing.Any], *, many: bool | None = None, partial=None):\n"
        '    """Deserialize a data structure to an object defined by this :class:`Schema <marshmallow.Schema>`\'s\n'
        '    fields, *without* ``validation``.\n\n    Longer text.\n    """\n'
        "    return data\n"
    )
    scope = next(n for n in parse_file("p", "src/schema.py", source.encode()).nodes if n.label == "Scope")
    assert scope.embed_text == (
        "schema.py function load(self, data, *, many, partial): Deserialize a data structure to an object defined by "
        "this Schema's fields, without validation."
    )
    assert "validation" in scope.keywords and "Longer text" in scope.keywords  # the docstring, for text search


def test_syntax_error_falls_back_to_chunks() -> None:
    parsed = parse_file("p", "broken.py", b"def broken(:\n    pass\n")
    assert parsed.nodes[0].props.get("parse_error") is True
    assert [n.label for n in parsed.nodes] == ["File", "Chunk"]


def test_gitignore_semantics() -> None:
    rules = parse_gitignore("*.log\n!keep.log\n/top.txt\nbuild/\ndocs/**/draft.md\n", "")
    assert is_ignored(rules, "a/b/x.log", False)
    assert not is_ignored(rules, "a/keep.log", False)
    assert is_ignored(rules, "top.txt", False) and not is_ignored(rules, "a/top.txt", False)
    assert is_ignored(rules, "x/build", True) and not is_ignored(rules, "x/build", False)
    assert is_ignored(rules, "docs/a/b/draft.md", False) and is_ignored(rules, "docs/draft.md", False)


def test_walk_skips_secrets_vendored_ignored_and_binaries(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    stats = WalkStats()
    found = sorted(entry.rel for entry in walk_tree(str(root), stats=stats))
    # a private key in a .txt and a binary without a known extension: listed here, dropped by content at ingest
    assert found == sorted([*EXPECTED_FILES, "deploy/backup.txt", "assets/logo.dat"])
    assert stats.skipped_secret >= 4 and stats.skipped_ignored >= 5
    sub = sorted(entry.rel for entry in walk_tree(str(root), "web"))
    assert sub == ["web/cart.ts", "web/invoice.js", "web/server.js"]
    assert sorted(e.rel for e in walk_tree(str(root), excluded=["web", "engine"])) == [
        r for r in found if not r.startswith(("web/", "engine/"))
    ]


def test_gitignore_above_the_project_root_inside_a_git_tree(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".gitignore").write_text("*.tmp\n/app/generated/\n")
    (repo / "app" / "generated").mkdir(parents=True)
    (repo / "app" / "generated" / "x.py").write_text("x = 1\n")
    (repo / "app" / "main.py").write_text("y = 1\n")
    (repo / "app" / "scratch.tmp").write_text("z\n")
    assert [e.rel for e in walk_tree(str(repo / "app"))] == ["main.py"]
    outside = tmp_path / "plain"  # no git tree above: an unrelated .gitignore up there does not apply
    (outside / "sub").mkdir(parents=True)
    (outside / ".gitignore").write_text("*.py\n")
    (outside / "sub" / "a.py").write_text("a = 1\n")
    assert [e.rel for e in walk_tree(str(outside / "sub"))] == ["a.py"]


def test_the_walk_skips_hard_linked_files(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text("x = 1\n", encoding="utf-8")
    outside = tmp_path / "outside.env.txt"
    outside.write_text("API_KEY=secret\n", encoding="utf-8")
    os.link(outside, project / "notes.txt")
    stats = WalkStats()
    assert [entry.rel for entry in walk_tree(str(project), stats=stats)] == ["app.py"]
    assert stats.skipped_other == 1
