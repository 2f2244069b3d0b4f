"""Intent-aware ranking (issue #41): "where is X done" gets the definition first, then its callers, then tests and docs;
"how do I use X" gets the docs first. Text search alone here (no model): the same weights order both modes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_sections.servers.rag_ops.brain import Brain
from mcp_sections.servers.rag_ops.ranking import (
    identifiers_in,
    intent_of,
    is_a,
    name_match,
    query_stems,
    role_of,
    thing_asked,
)
from mcp_sections.shared.brain.model import Node, split_identifier
from mcp_sections.shared.brain.sqlite_backend import SQLiteBrainStore

TREE = {
    "src/shop/pricing.py": (
        '"""Prices."""\n\n\n'
        "def apply_discount(price: float, percent: float) -> float:\n"
        '    """Apply a percentage discount to a price and round it to cents."""\n'
        "    return round(price * (1 - percent / 100), 2)\n\n\n"
        "def checkout_total(prices: list[float], percent: float) -> float:\n"
        '    """The total of a basket once the discount applies."""\n'
        "    return sum(apply_discount(p, percent) for p in prices)\n"
    ),
    "tests/test_pricing.py": (
        "from shop.pricing import apply_discount\n\n\n"
        "def test_apply_discount_rounds_the_discount_to_cents():\n"
        "    assert apply_discount(10.0, 15) == 8.5  # a percentage discount applied to a price\n\n\n"
        "def test_apply_discount_of_zero_percent_keeps_the_price():\n"
        "    assert apply_discount(10.0, 0) == 10.0\n"
    ),
    "docs/discounts.rst": (
        "Discounts\n=========\n\nHow to apply a discount\n-----------------------\n\n"
        "Call ``apply_discount`` with the price and the percentage discount to apply; the result is rounded.\n"
    ),
    "src/shop/pricing.pyi": "def apply_discount(price: float, percent: float) -> float: ...\n",
}


@pytest.fixture
def brain(tmp_path: Path) -> Iterator[Brain]:
    root = tmp_path / "shop"
    for rel, text in TREE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    brain = Brain(SQLiteBrainStore(tmp_path / "brain.sqlite3"), [root], background_embeddings=False)
    brain.ingest_directory(str(root), "shop")
    yield brain
    brain.close()


def _top(brain: Brain, query: str) -> list[tuple[str, str]]:
    found = brain.search(query, project_ids=["shop"], types=None, semantic=False, limit=5)["results"]
    return [(r["relative_path"], r["properties"].get("qualname") or r["name"]) for r in found]


def test_where_questions_get_the_definition_first_then_its_callers_then_tests_and_docs(brain: Brain) -> None:
    top = _top(brain, "where is the percentage discount applied to a price implemented")
    assert top[0] == ("src/shop/pricing.py", "apply_discount")
    assert ("src/shop/pricing.py", "checkout_total") in top[1:3]  # its caller, by the call graph
    roles = [path.split("/")[0] for path, _ in top]
    assert roles.index("src") < roles.index("tests") and roles.index("src") < roles.index("docs")
    assert ("src/shop/pricing.pyi", "apply_discount") not in top[:2]  # a type stub is not the definition


def test_how_do_i_questions_get_the_docs_first(brain: Brain) -> None:
    top = _top(brain, "how do I apply a percentage discount to a price")
    assert top[0] == ("docs/discounts.rst", "How to apply a discount")


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        ("where is the bash completion script generated", "code"),
        ("which validator checks that a string is a valid URL", "code"),
        ("how is help text wrapped to fit the terminal width", "code"),
        ("a file that is only opened when something is first written to it", "code"),
        ("how do I make an option that can be passed several times", "docs"),
        ("how can I configure the logging", "docs"),
        ("why should I use click instead of argparse", "docs"),
        ("what changed when upgrading to 3.0", "changes"),
        ("how does the library deal with unicode on Windows", "mixed"),
    ],
)
def test_the_intent_of_a_question(question: str, intent: str) -> None:
    assert intent_of(question) == intent


def test_roles_and_spelled_names() -> None:
    def scope(path: str, name: str, **props: object) -> Node:
        return Node(id="x", label="Scope", project_id="p", name=name, path=path, props={"kind": "function", **props})

    assert role_of(scope("tests/test_a.py", "test_a")) == "test"
    assert role_of(scope("src/a/conftest.py", "runner")) == "test"
    assert role_of(scope("src/a/__init__.pyi", "asdict")) == "stub"
    assert role_of(scope("examples/demo.py", "main")) == "example"
    assert role_of(scope("src/a/core.py", "inner", parent="abc")) == "nested"
    assert role_of(scope("src/a/core.py", "asdict")) == "code"
    section = Node(id="y", label="DocumentSection", project_id="p", name="Install", path="docs/install.rst")
    assert role_of(section) == "doc"
    assert role_of(Node(id="z", label="DocumentSection", project_id="p", name="8.1", path="CHANGES.rst")) == "changelog"
    assert role_of(Node(id="u", label="DocumentSection", project_id="p", name="3.0", path="docs/upgrading.rst")) == (
        "changelog"  # an upgrading guide is version history
    )
    steps = "Next steps\n----------\n\n- Nesting? See :doc:`nesting`.\n- Your own field? See :doc:`custom_fields`.\n"
    navigation = Node(id="n", label="DocumentSection", project_id="p", name="Next steps", path="docs/a.rst")
    navigation.content = steps
    assert role_of(navigation) == "navigation"  # a section that only points elsewhere
    assert role_of(scope("src/a/core.py", "__str__", kind="method")) == "special"
    assert identifiers_in("where is post_load or attrs.define() or CliRunner, and the Choice type") == [
        "post_load",
        "attrs.define",
        "define",
        "CliRunner",
        "Choice",
    ]
    assert identifiers_in("where is the __init__ built") == []


BUILDER = (
    "class Builder:\n"
    "    def add_str(self):\n"
    '        """Add a __str__ method: the generated __repr__ text, built once per class and shared by every '
    'instance of the class."""\n'
    "        return self\n\n"
    "    def add_repr(self, ns):\n"
    '        """Add the method that shows an instance."""\n'
    "        return ns\n"
)


def test_the_definition_whose_own_name_the_question_spells_comes_first(tmp_path: Path) -> None:
    """`add_str` mentions `__repr__` more often than `add_repr` does; the question spells `add_repr`'s name."""
    root = tmp_path / "lib"
    (root / "src").mkdir(parents=True)
    (root / "src" / "builder.py").write_text(BUILDER, encoding="utf-8")
    brain = Brain(SQLiteBrainStore(tmp_path / "brain.sqlite3"), [root], background_embeddings=False)
    try:
        brain.ingest_directory(str(root), "lib")
        found = brain.search(
            "how is the generated __repr__ built", project_ids=["lib"], types=None, semantic=False, limit=3
        )["results"]
    finally:
        brain.close()
    assert [r["properties"].get("qualname") for r in found][:2] == ["Builder.add_repr", "Builder.add_str"]


def test_the_words_of_a_name_and_how_much_of_it_a_question_spells() -> None:
    assert split_identifier("_make_repr_script") == ["make", "repr", "script"]
    assert split_identifier("HTTPServer.getValue") == ["http", "server", "get", "value"]
    assert split_identifier("__repr__") == ["repr"]
    assert split_identifier("Why marshmallow?") == ["why", "marshmallow"]
    assert split_identifier("base64_decode") == ["base64", "decode"] and split_identifier("HTTP2Server") == [
        "http",
        "2",
        "server",
    ]
    stems = query_stems("how is help text wrapped, after the value is set, for several options")
    assert {"help", "text", "wrap", "post", "multipl", "option"} <= stems  # stems, and the words names use
    assert not {"how", "is", "set", "the"} & stems

    def scope(name: str) -> Node:
        return Node(id="x", label="Scope", project_id="p", name=name, path="src/a.py", props={"kind": "function"})

    repr_stems = query_stems("how is the generated __repr__ built")
    assert name_match(repr_stems, scope("add_repr")) == 1 / 3
    assert name_match(repr_stems, scope("add_str")) == 0
    assert name_match(query_stems("where is the text wrapped"), scope("wrap_text")) == 2 / 3  # more than `wrap`
    assert name_match(query_stems("where is the text wrapped"), scope("wrap")) == 1 / 2
    file = Node(id="f", label="File", project_id="p", name="repr.py", path="src/repr.py")
    assert name_match(repr_stems, file) == 0  # a file's name is its path, not a definition


def test_the_kind_of_thing_a_question_asks_for() -> None:
    assert thing_asked("the field that embeds another schema") == "field"
    assert thing_asked("Which validator checks a URL") == "validator"
    assert thing_asked("what exception is raised when it is not a class") == "error"
    assert thing_asked("which function lists the attributes") is None  # every definition is a function or a class
    assert thing_asked("where is the length validator") is None

    def scope(name: str, signature: str, path: str = "src/a/fields.py", **props: object) -> Node:
        props = {"kind": "class", "signature": signature, **props}
        return Node(id="x", label="Scope", project_id="p", name=name, path=path, props=props)

    assert is_a(scope("Nested", "class Nested(Field)", "src/a/core.py"), "field")  # derives from a Field
    assert is_a(scope("NotAClassError", "class NotAClassError(ValueError)", "src/a/core.py"), "error")  # named so
    assert is_a(scope("to_bool", "def to_bool(val)", "src/a/converters.py", kind="function"), "converter")
    assert not is_a(scope("schema", "def schema(self)", kind="method", parent="n"), "field")  # a member
    assert not is_a(scope("Schema", "class Schema(Base)", "src/a/schema.py"), "field")
    assert not is_a(scope("Field", "class Field(FieldABC)"), "field")  # the general one, not a particular field
