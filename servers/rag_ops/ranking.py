"""What a question wants first: its intent, the role of each node, and the weight of a role for an intent.

A developer asking "where is X done", "which function does Y" or "how is Z implemented" wants the definition, then
its callers, then the tests and the docs; one asking "how do I use X", "how do I configure Y" or "why X" wants the
docs first. `intent_of` reads that from the question's words (no model), `role_of` from a node's label, kind and path
(a test, a type stub, an example, a changelog, a documentation section, code), and `WEIGHTS` scales the fused rank
score of each candidate by the weight of its role for the intent. The weights were set on the dev half of the
evaluation in `benchmarks/data/brain_code_eval.json` (`python -m benchmarks.bench_brain --eval`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Literal

from mcp_sections.shared.brain.model import Node, split_identifier

Intent = Literal["code", "docs", "changes", "mixed"]
Role = Literal[
    "code",
    "special",
    "nested",
    "block",
    "stub",
    "test",
    "example",
    "doc",
    "navigation",
    "readme",
    "changelog",
    "file",
    "text",
]
NAVIGATION_CHARS = 800

_CHANGES = re.compile(
    r"\b(what('s| has| have)? changed|changelog|change ?log|release notes?|upgrad\w*|migrat\w*|deprecat\w*|"
    r"breaking changes?|what'?s new|new in (version )?\d|in version \d|since (version )?\d)"
)
_DOCS = re.compile(
    r"^(how (do|can|should|would|could) (i|we|you|one)\b|how to\b|can i\b|is it possible|should i\b|why\b|"
    r"when should (i|we|you)\b|"
    r"what is the difference|what'?s the difference|difference between|what are\b|what is an?\b|explain\b|"
    r"is there (a|an) (guide|tutorial|example)|tutorial|guide to|example of|best way)"
)
_CODE = re.compile(
    r"^(where\b|which (function|class|method|decorator|validator|field|exception|error|type|module|converter|filter|"
    r"code|object|helper|part)s?\b|what (function|class|method|decorator|exception|error|type|code)s?\b|"
    r"how (is|are) .+ (implemented|done|built|generated|computed|handled|made|created|drawn|rendered|parsed|stored|"
    r"read|written|wrapped|collected|merged|looked up|resolved|validated|checked|converted|serialized|deserialized|"
    r"defined|raised)\b|show me the code|implementation of|source of|definition of)"
)
_CODE_WORDS = re.compile(r"\b(implemented|implementation|defined|definition|source code|function|method|class)\b")
_DOCS_WORDS = re.compile(
    r"\b(configure|configuration|settings?|enable|disable|turn (on|off)|install\w*|docs?|documentation)\b"
)

_TEST_NAME = re.compile(r"^(test_|Test[A-Z_])")
_CHANGELOG = re.compile(
    r"^(change(s|log)?|history|news|release[-_ ]?notes?|upgrad(e|ing)|migrat(e|ing|ion)|whats[-_]?new)([-_.].*)?$",
    re.IGNORECASE,
)
"""Version history: changelogs, and the upgrading or migration guides that say what changed between versions."""
_REFERENCE = re.compile(r":(doc|ref|class|func|meth|mod|attr|obj):`|`[^`]+`_|\[[^\]]+\]\([^)]+\)")
_VERSION = re.compile(r"\b\d+\.\d+(\.\d+)?\b")
_TEST_DIRS = frozenset({"test", "tests", "testing", "spec", "specs", "__tests__"})
_EXAMPLE_DIRS = frozenset({"example", "examples", "demo", "demos", "samples", "sample"})
_DOC_LANGUAGES = frozenset({"markdown", "rst", "txt", "text", "adoc", "org", "tex", "html", "htm"})

WEIGHTS: dict[Intent, dict[Role, float]] = {
    "code": {
        "navigation": 0.3,
        "code": 1.0,
        "special": 0.6,
        "nested": 0.6,
        "block": 0.6,
        "stub": 0.45,
        "test": 0.3,
        "example": 0.4,
        "doc": 0.55,
        "readme": 0.5,
        "changelog": 0.2,
        "file": 0.5,
        "text": 0.35,
    },
    "docs": {
        "navigation": 0.4,
        "code": 0.6,
        "special": 0.35,
        "nested": 0.35,
        "block": 0.35,
        "stub": 0.3,
        "test": 0.25,
        "example": 0.45,
        "doc": 1.0,
        "readme": 0.85,
        "changelog": 0.3,
        "file": 0.5,
        "text": 0.6,
    },
    "changes": {
        "navigation": 0.4,
        "code": 0.5,
        "special": 0.3,
        "nested": 0.3,
        "block": 0.3,
        "stub": 0.3,
        "test": 0.25,
        "example": 0.35,
        "doc": 1.0,
        "readme": 0.8,
        "changelog": 1.0,
        "file": 0.5,
        "text": 0.6,
    },
    "mixed": {
        "navigation": 0.35,
        "code": 1.0,
        "special": 0.6,
        "nested": 0.6,
        "block": 0.6,
        "stub": 0.45,
        "test": 0.3,
        "example": 0.45,
        "doc": 0.9,
        "readme": 0.8,
        "changelog": 0.3,
        "file": 0.5,
        "text": 0.5,
    },
}


def intent_of(query: str) -> Intent:
    """What the question wants first: code (a definition), docs (usage, configuration, concepts), changes (what a
    version changed), or mixed (both equally: "how does X deal with Y")."""
    text = " ".join(query.lower().split())
    if _CHANGES.search(text):
        return "changes"
    if _CODE.search(text):
        return "code"
    if _DOCS.search(text):
        return "docs"
    if text.startswith(("how does", "how do ", "how can", "what does", "what happens")):
        return "code" if _CODE_WORDS.search(text) else "mixed"
    if _DOCS_WORDS.search(text) and not _CODE_WORDS.search(text):
        return "docs"
    return "code"  # a phrase naming a behaviour ("a file opened on first write"): the code that does it


def role_of(node: Node) -> Role:
    """What a node is to a reader: code (a definition), a special method (`__init__`), a nested definition or a
    module-level block, a type stub, a test, an example, a documentation section, a README, a changelog, a file, or
    other text."""
    path = node.path or ""
    parts = path.lower().split("/")
    stem = posixpath.splitext(parts[-1])[0] if parts else ""
    if node.label == "File":
        return "file"
    if _CHANGELOG.match(stem):
        return "changelog"
    in_tests = any(part in _TEST_DIRS for part in parts[:-1]) or stem.startswith("test_") or stem.endswith("_test")
    in_examples = any(part in _EXAMPLE_DIRS for part in parts[:-1])
    if node.label == "Scope":
        return _scope_role(node, stem, in_tests, in_examples)
    return _text_role(node, stem, in_tests, in_examples)


def _scope_role(node: Node, stem: str, in_tests: bool, in_examples: bool) -> Role:
    """The role of a definition or a module-level block."""
    if in_tests or stem == "conftest" or _TEST_NAME.match(node.name):
        return "test"
    if (node.path or "").endswith(".pyi"):
        return "stub"
    if in_examples:
        return "example"
    kind = node.props.get("kind")
    if kind == "block":
        return "block"
    if kind == "method" and node.name.startswith("__") and node.name.endswith("__"):
        return "special"  # protocol plumbing (__init__, __str__): the class is the answer
    return "nested" if kind == "function" and node.props.get("parent") else "code"


def _text_role(node: Node, stem: str, in_tests: bool, in_examples: bool) -> Role:
    """The role of a document section, a web page or a chunk of text."""
    if in_tests:
        return "test"
    if stem == "readme":
        return "readme"
    if in_examples:
        return "example"
    if node.label == "DocumentSection" and _points_elsewhere(node.content):
        return "navigation"
    if node.label == "DocumentSection" or str(node.props.get("language") or "") in _DOC_LANGUAGES:
        return "doc"
    if node.label == "Chunk" and posixpath.splitext(node.path or "")[1].lower() in (".rst", ".md", ".txt", ".adoc"):
        return "doc"
    return "text"


def _points_elsewhere(content: str) -> bool:
    """A short section that mostly lists references to other pages ("Next steps", "See also")."""
    body = content.split("\n", 1)[1] if "\n" in content else ""
    if len(body) > NAVIGATION_CHARS:
        return False
    lines = [line for line in body.splitlines() if line.strip() and not set(line.strip()) <= set("=-~^*#+")]
    pointing = sum(1 for line in lines if _REFERENCE.search(line))
    return pointing >= 2 and pointing * 2 >= len(lines)


def versions_in(query: str) -> set[str]:
    """Version numbers a question names ("upgrading to 3.0")."""
    return {match.group(0) for match in _VERSION.finditer(query)}


def names_version(node: Node, versions: set[str]) -> bool:
    """Whether a node's own name carries one of `versions` ("Upgrading to 3.0", "3.0.0 (2019-08-18)")."""
    return any(re.search(rf"(?<![\w.]){re.escape(version)}(?![\w])", node.name) for version in versions)


def is_document(node: Node) -> bool:
    """A file read as a document (Markdown, reStructuredText): its sections are what to show of it."""
    return str(node.props.get("language") or "") in ("markdown", "rst")


def weight(intent: Intent, node: Node) -> float:
    return WEIGHTS[intent][role_of(node)]


_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(\(\))?")
MAX_IDENTIFIERS = 12


def identifiers_in(query: str) -> list[str]:
    """The names a question spells as code: `post_load`, `CliRunner`, `asdict()`, `attrs.define` (→ `define` too),
    a capitalised word inside the sentence (`Choice`). Plain words are left to the other legs (a symbol leg on
    "field" or "schema" pulls every class of that name); dunder names (`__init__`) name too many definitions."""
    names: list[str] = []
    for match in _TOKEN.finditer(query):
        token = match.group(0).removesuffix("()")
        parts = [part for part in token.split(".") if part]
        code_like = bool(match.group(1)) or len(parts) > 1
        for part in [token, parts[-1]] if len(parts) > 1 else parts:
            if part.startswith("__") or len(part) < 2:
                continue
            inner = part.strip("_")
            shaped = "_" in inner or any(c.isupper() for c in inner[1:]) or (match.start() > 0 and part[0].isupper())
            if code_like or shaped:
                names.append(part)
    return list(dict.fromkeys(names))[:MAX_IDENTIFIERS]


# ---- the name signal: the question spells the candidate's own name -------------------------------------------------

NAME_BOOST = 0.75
"""How much more a candidate of the wanted role counts when the question spells all of its own name (×1.375 for a
one-word name, ×1.5 for two words both spelled); set on the dev questions, where 0.5 to 1.0 gave the same recall. On
the two code bases whose questions were written blind (sqlparse, structlog) it cost one or two first places of 24 each:
it fits the three it was set on better than code in general (README, "What a brain search covers")."""
THING_BOOST = 1.25
"""How much more a top-level definition of the kind of thing the question asks for counts ("the field that …":
`Nested(Field)`); set on the dev questions, where 1.25 to 2 gave the same recall."""
_SUFFIXES = ("ing", "ly", "ed", "es", "s", "e")
_STOPWORDS = (
    "a an the is are was be been of to in on at by for from with into as and or not no it its this that these those "
    "what which where when how who do does did can could should would i we you my our your me us them their "
    "there here some any all each every one get set class function"
)
STOPWORDS = frozenset(_STOPWORDS.split())
"""Words that say nothing of a name: a question's function words and the kinds it asks for ("which function"), and
`get`/`set` (half the accessors start so)."""
NAME_ALIASES = {
    "after": ("post",),
    "before": ("pre",),
    "several": ("multiple", "multi"),
    "many": ("multiple", "multi"),
}
"""What names say for a question's word: hooks are `post_load`/`pre_dump`, repetition is `multiple`."""


def stem(word: str) -> str:
    """A word without its common English ending ("wrapped" → "wrap", "serializes" → "serializ")."""
    word = word.lower()
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]  # "wrapp" → "wrap"
    return word


def query_stems(query: str) -> set[str]:
    """The stems of a question's words (its identifiers split the same way as names), function words left out, and
    the words names use for them ("after" → post, "several" → multiple)."""
    words = [word for word in split_identifier(query) if word not in STOPWORDS]
    words += [alias for word in words for alias in NAME_ALIASES.get(word, ())]
    return {stem(word) for word in words}


def name_match(stems: AbstractSet[str], node: Node) -> float:
    """How much of a node's own name (a definition's name, not its container's; a section's heading) the question
    spells: the words spelled over the name's words plus one, so that a longer name fully spelled counts more than a
    one-word name (`add_repr` for "how is the generated __repr__ built": 1/3; `add_str`: 0)."""
    if node.label not in ("Scope", "DocumentSection"):
        return 0.0
    words = [stem(word) for word in split_identifier(node.name) if word not in STOPWORDS]
    return sum(word in stems for word in words) / (len(words) + 1)


_THING = re.compile(r"^(?:which|what|the|a|an)\s+([a-z]+)\b")
_BASES = re.compile(r"^class\s+\w+\s*\(([^)]*)\)")
KIND_ALIASES = {"exception": "error"}
ROUTE_WORDS = frozenset({"route", "routes", "endpoint", "endpoints"})
ROUTE_THINGS = ("rout", "endpoint")  # their stems: what a route scope is


def thing_asked(query: str) -> str | None:
    """The kind of thing a question asks for by its first noun ("the field that …", "which validator …"), else a
    route when it names one anywhere ("where is the route that deletes an order"): a stem."""
    text = " ".join(query.lower().split())
    match = _THING.match(text)
    if match and match.group(1) not in STOPWORDS:
        return stem(KIND_ALIASES.get(match.group(1), match.group(1)))
    return ROUTE_THINGS[0] if ROUTE_WORDS & set(re.findall(r"[a-z]+", text)) else None


@dataclass(frozen=True)
class Question:
    """What the ranking reads from a question, once: its intent, its word stems, the kind of thing it asks for."""

    intent: Intent
    stems: frozenset[str]
    thing: str | None


def read_question(query: str) -> Question:
    """The question's intent (`intent_of`), stems (`query_stems`) and the kind of thing it asks for (`thing_asked`)."""
    return Question(intent_of(query), frozenset(query_stems(query)), thing_asked(query))


def is_a(node: Node, thing: str) -> bool:
    """Whether a top-level definition is such a thing: it derives from a class named for it (`Nested(Field)` for
    "field"), its name ends with it (`NotAnAttrsClassError` for "exception"), or its module is named for it
    (`converters.py` for "converter"); a route registration is a route or an endpoint."""
    if node.label == "Scope" and node.props.get("kind") == "route":
        return thing in ROUTE_THINGS  # an HTTP route registration (`router.delete /api/orders/:id`)
    if node.label != "Scope" or node.props.get("kind") not in ("class", "function") or node.props.get("parent"):
        return False
    own = [stem(word) for word in split_identifier(node.name)]
    if own == [thing]:
        return False  # `Field` itself: "the field that …" asks for a particular one
    bases = _BASES.match(str(node.props.get("signature") or ""))
    named = [*(stem(word) for word in split_identifier(bases.group(1))[-1:]), *own[-1:]] if bases else own[-1:]
    module = posixpath.splitext(posixpath.basename(node.path or ""))[0]
    return thing in named or stem(module) == thing


def fit(intent: Intent, node: Node, stems: AbstractSet[str], thing: str | None = None) -> float:
    """What a candidate's fused score is multiplied by: the weight of its role for the intent and, for the role the
    intent wants most, the share of its own name the question spells (`stems`: `query_stems`) and whether it is the
    kind of thing the question asks for (`thing`: `thing_asked`)."""
    share = weight(intent, node)
    if share >= 1.0:
        share *= 1 + NAME_BOOST * name_match(stems, node)
        if thing and is_a(node, thing):
            share *= THING_BOOST
    return share
