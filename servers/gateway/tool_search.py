"""`find_tools`: a need in plain words → the section tools that answer it, ranked, without starting a section.

The index holds one entry per tool of every section whose definitions are known without a process (every
built-in section, from its declaration; a third-party section once it was first started):
- BM25 over SQLite FTS5 in memory (the suite's full-text machinery, `shared.text.fulltext`), one row per tool with
  weighted columns: the name, the title, the description, the parameters (names and descriptions), the section
  (id and description), the tool's example needs (`@tool(examples=...)`, six per built-in tool) and the section's
  `search_terms` for it (from its settings: the programs shell_ops may start, those it never allows);
- one vector per tool, made with the suite's embedding model (`shared.embeddings`): the normalised mean of its
  example needs' vectors plus `HEADING_WEIGHT` × the vector of its name, title and first sentence. Passage vectors
  are cached in `<cache dir>/tool_search.sqlite` by content hash and model key, so a restart embeds nothing that did
  not change.

A need is first read apart (`need.read_need`): the material it carries (paths, URLs, quoted or pasted text, code, JSON,
error output, ids) is replaced by its kind, and its clauses are read as the request, asides (parentheses, "because...",
"so it starts clean") or context. Its vector is the normalised sum of three texts' vectors (in the forward passes that
pad least, a long need's at once: `embed_texts`): the request, its head (the first words of each request clause: the
verb and its object) and the whole context; so a pasted "image" tag or "tasks" of a quoted page no longer decide. It is
ranked by the memory section's fusion rule (`servers/memory/store.py`): cosine similarity plus `TEXT_WEIGHT × coverage`,
coverage being the share of the query's searched words a tool's row holds (function words aside: `QUERY_STOPWORDS`),
plus `MOOD_WEIGHT` for a tool whose readOnlyHint fits the need's mood (a question wants a tool that reads, "save ..."
one that writes). Without the embedding model (light install, model failed, or still loading past `MODEL_WAIT_SECONDS`)
the ranking is BM25 alone, and the result says so. The gateway's own tools are indexed too, as section "gateway" (their
summary says to call them directly), those its client is offered (`own`).

Measured (`python -m benchmarks.bench_gateway --tool-search-only`), recall@1/@3 hybrid: dev 0.886/0.956, dev2
0.776/0.925, long_dev (long needs, tuned on) 0.891/0.971; the long needs written blind and the held-out needs, never
read while tuning, are in the README. How the constants were chosen, and the variants that ranked worse, are in
`benchmarks/tool_search_eval.py`.

The index is built off the event loop, once per gateway, on the first search (rebuilt, from cached vectors, when a
third-party section's definitions become known): the text part first, so that BM25 answers while the model loads.
Not at start-up: a gateway that never searches keeps its start, its hops and its memory (the model is ~160 MB of
RSS) as they were, and a short-lived one never exits in the middle of loading a model.
"""

from __future__ import annotations

import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations, pairwise
from typing import TYPE_CHECKING, Any, Literal

from mcp_sections.shared.framework.schemas import lean_schema
from mcp_sections.shared.ground.errors import invalid_input
from mcp_sections.shared.text.fulltext import WORD, match_expression, query_terms

from .need import Mood, read_need

if TYPE_CHECKING:
    import numpy as np

    from mcp_sections.servers.pool.catalog import SectionEntry
    from mcp_sections.shared.embeddings import Embedder, EmbeddingService, EmbeddingSettings
    from mcp_sections.shared.settings.config import Settings

    from .models import FindToolsInput, FindToolsResult

logger = logging.getLogger("mcp_sections.gateway")

Mode = Literal["hybrid", "bm25"]

#: FTS5 columns and their BM25 weights: names, titles and example needs say what a tool is for; descriptions and
#: parameters say much else besides.
COLUMNS = {
    "name": 4.0,
    "title": 3.0,
    "description": 1.0,
    "parameters": 0.5,
    "section": 0.5,
    "examples": 3.0,
    "terms": 0.5,  # the section's `search_terms` for the tool (e.g. the programs run_command may start)
}
#: The weight of coverage beside the cosine similarity (chosen on the dev and dev2 needs: see
#: `benchmarks/tool_search_eval.py`).
TEXT_WEIGHT = 0.4
MOOD_WEIGHT = 0.04
"""What a tool whose readOnlyHint fits the need's mood (`need.Need.mood`: a question wants a read-only tool, "save...",
"delete..." one that changes something) gains beside cosine + coverage. On the tuning needs, 0.02-0.06 each gave 4 or
3 more first places of 386 (dev2 and long_dev), none fewer; the need's mood disagrees with its wanted tool's hint for 4
of them ("mem_x is out of date: change it", read as a question)."""
#: The heading's share of a tool's vector beside the (unit) mean of its examples: the examples say what a user asks.
HEADING_WEIGHT = 0.25
#: Function words beyond `shared.text.fulltext.STOPWORDS` (shared with memory and the brain): in a need they say how it
#: is asked, not which tool answers, yet the long descriptions hold most of them, so they only blur BM25 and coverage.
QUERY_STOPWORDS = frozenset(
    WORD.findall(
        "about above after again against all also am any before being below between both could during each "
        "every few further had having he her here hers him his into just more most much must no nor not now "
        "off once only other ought out over own s same she should some such t than those through too under "
        "until up very would yours"
    )
)
#: The gateway's own tools are indexed as this section (they are called directly, not with call_section_tool).
GATEWAY_SECTION = "gateway"
GATEWAY_DESCRIPTION = (
    "The gateway's own tools: the sections and their tools, calling a section's tool, delegating to sub-agents, "
    "the working directory, the environment and the project."
)
MODEL_WAIT_SECONDS = 15.0  # a search waits this long for a loading model before answering by BM25 alone
#: What a forward pass of the embedding model costs beyond its tokens, in tokens: all-MiniLM-L6-v2 on ONNX Runtime
#: (one thread) took ~2.2 ms a pass plus ~0.21 ms a token, padding included (`embed_texts`).
PASS_COST_TOKENS = 10
PARALLEL_FROM_TOKENS = 32  # a need whose longest text has fewer tokens is embedded one pass after the other
SUMMARY_LENGTH = 240
CACHE_FILE = "tool_search.sqlite"

_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n\s*\n")


@dataclass(frozen=True)
class ToolEntry:
    """One tool as the index knows it."""

    section: str
    name: str
    title: str
    summary: str
    input_schema: dict[str, Any] = field(repr=False)
    columns: tuple[str, ...] = field(repr=False)  # the FTS5 row, in `COLUMNS` order
    examples: tuple[str, ...] = ()
    read_only: bool | None = None  # its readOnlyHint; None when the definition does not say

    @property
    def heading(self) -> str:
        """The passage embedded beside the examples: what the tool is called and its first sentence."""
        return f"{self.name.replace('_', ' ')}. {self.title}: {self.summary}"


@dataclass(frozen=True)
class Hit:
    entry: ToolEntry
    score: float


def summary(description: str) -> str:
    """The first sentence of a description (cut at `SUMMARY_LENGTH` characters)."""
    first = _SENTENCE_END.split(description.strip(), maxsplit=1)[0]
    first = " ".join(first.split())
    return first if len(first) <= SUMMARY_LENGTH else first[: SUMMARY_LENGTH - 1].rstrip() + "…"


def section_entries(
    section: str,
    description: str,
    definitions: Iterable[dict[str, Any]],
    examples: dict[str, tuple[str, ...]],
    terms: dict[str, str] | None = None,
) -> list[ToolEntry]:
    """The index entries of one section's tool definitions (`examples` and `terms` by tool name, from the
    declaration)."""
    entries = []
    for definition in definitions:
        name = str(definition.get("name") or "")
        text = str(definition.get("description") or "")
        title = str(definition.get("title") or name)
        schema = lean_schema(definition.get("inputSchema") or {"type": "object"})  # same constraints, fewer tokens
        tool_examples = tuple(examples.get(name, ()))
        columns = (
            name.replace("_", " "),
            title,
            text,
            _parameters_text(schema),
            f"{section.replace('_', ' ')} {description}",
            " . ".join(tool_examples),
            (terms or {}).get(name, ""),
        )
        hint = (definition.get("annotations") or {}).get("readOnlyHint")
        read_only = hint if isinstance(hint, bool) else None
        entries.append(
            ToolEntry(section, name, title, summary(text) or title, schema, columns, tool_examples, read_only)
        )
    return entries


def own_entries() -> list[ToolEntry]:
    """The index entries of the gateway's own tools (section `GATEWAY_SECTION`): their summary says to call them
    directly."""
    from mcp_sections.shared.framework.tools import spec_of
    from mcp_sections.shared.serving.sdk_tools import definition

    from .section import GATEWAY_TOOLS

    specs = [spec_of(function) for function in GATEWAY_TOOLS]
    examples = {spec.name: spec.examples for spec in specs}
    entries = section_entries(GATEWAY_SECTION, GATEWAY_DESCRIPTION, [definition(spec) for spec in specs], examples)
    return [replace(entry, summary=f"{entry.summary} (the gateway's own tool: call it directly)") for entry in entries]


def _parameters_text(schema: dict[str, Any]) -> str:
    parts = []
    for name, prop in (schema.get("properties") or {}).items():
        described = prop.get("description") if isinstance(prop, dict) else None
        parts.append(f"{name.replace('_', ' ')} {described or ''}".strip())
    return " ; ".join(parts)


class ToolIndex:
    """The entries, their BM25 table and (when a model is available) one vector per entry. Built once, then
    only read (from any thread)."""

    def __init__(self, entries: Sequence[ToolEntry], vectors: np.ndarray | None = None) -> None:
        self.entries = list(entries)
        self.vectors = vectors
        self._lock = threading.Lock()
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        names = ", ".join(COLUMNS)
        self._db.execute(
            f"CREATE VIRTUAL TABLE tools USING fts5({names}, tokenize='porter unicode61 remove_diacritics 2')"
        )
        self._db.executemany(
            f"INSERT INTO tools(rowid, {names}) VALUES (?{', ?' * len(COLUMNS)})",
            [(row, *entry.columns) for row, entry in enumerate(self.entries)],
        )
        self._weights = ", ".join(str(weight) for weight in COLUMNS.values())

    @property
    def mode(self) -> Mode:
        return "hybrid" if self.vectors is not None else "bm25"

    def with_vectors(self, vectors: np.ndarray) -> ToolIndex:
        return ToolIndex(self.entries, vectors)

    def bm25(self, query: str) -> dict[int, float]:
        """BM25 score (higher is better) of every entry holding a searched word of `query`."""
        match = match_expression(query, extra_stopwords=QUERY_STOPWORDS)
        if match is None:
            return {}
        with self._lock:
            rows = self._db.execute(
                f"SELECT rowid, bm25(tools, {self._weights}) FROM tools WHERE tools MATCH ?", (match,)
            ).fetchall()
        return {row: -float(rank) for row, rank in rows}

    def coverage(self, query: str) -> dict[int, float]:
        """For each entry, the share of the query's searched words it holds (matched as FTS5 matches them)."""
        terms = query_terms(query, extra_stopwords=QUERY_STOPWORDS)
        held: dict[int, int] = {}
        with self._lock:
            for term in terms:
                for (row,) in self._db.execute(
                    "SELECT rowid FROM tools WHERE tools MATCH ?", (match_expression(term),)
                ):
                    held[row] = held.get(row, 0) + 1
        return {row: count / len(terms) for row, count in held.items()}

    def mood_fit(self, mood: Mood | None) -> np.ndarray:
        """1 for each entry whose readOnlyHint fits the need's mood (read-only for a question, not for a change), else
        0 (and 0 for every entry when the need has no mood or a tool says nothing)."""
        import numpy as np

        wanted = {"ask": True, "change": False}.get(mood or "")
        return np.array([wanted is not None and entry.read_only is wanted for entry in self.entries], dtype=np.float64)

    def similarities(self, query_vector: np.ndarray) -> np.ndarray:
        from mcp_sections.shared.embeddings import cosine_scores

        assert self.vectors is not None
        return cosine_scores(self.vectors, query_vector)

    def rank(
        self,
        query: str,
        query_vector: np.ndarray | None,
        limit: int,
        sections: set[str] | None = None,
        mode: Literal["fused", "bm25", "vectors"] = "fused",
        shows: Callable[[str, str], bool] | None = None,
    ) -> list[Hit]:
        """The best `limit` entries for `query`: fused (needs `query_vector`), BM25 alone or vectors alone."""
        import numpy as np

        if mode == "bm25" or query_vector is None or self.vectors is None:
            found = self.bm25(query)
            rows = np.fromiter(found, dtype=np.int64, count=len(found))
            scores = np.fromiter(found.values(), dtype=np.float64, count=len(found))
        else:
            rows = np.arange(len(self.entries))
            scores = self.similarities(query_vector).astype(np.float64)
            if mode == "fused":
                for row, share in self.coverage(query).items():
                    scores[row] += TEXT_WEIGHT * share
                scores += MOOD_WEIGHT * self.mood_fit(read_need(query).mood)
        hits: list[Hit] = []
        for at in np.lexsort((rows, -scores)):  # best first, ties by row; filtered only until `limit` are found
            entry = self.entries[rows[at]]
            if (sections is None or entry.section in sections) and (shows is None or shows(entry.section, entry.name)):
                hits.append(Hit(entry, float(scores[at])))
                if len(hits) == limit:
                    break
        return hits


def tool_vectors(entries: Sequence[ToolEntry], service: EmbeddingService) -> np.ndarray:
    """One L2-normalised vector per entry: the normalised mean of its examples' vectors plus `HEADING_WEIGHT` × its
    heading's vector (the heading alone for a tool without examples)."""
    import numpy as np

    passages = [entry.heading for entry in entries] + [example for entry in entries for example in entry.examples]
    vectors = service.embed(passages)
    result = vectors[: len(entries)].copy()
    offset = len(entries)
    for row, entry in enumerate(entries):
        if entry.examples:
            mean = vectors[offset : offset + len(entry.examples)].mean(axis=0)
            result[row] = HEADING_WEIGHT * result[row] + mean / max(float(np.linalg.norm(mean)), 1e-12)
            offset += len(entry.examples)
    result /= np.maximum(np.linalg.norm(result, axis=1, keepdims=True), 1e-12)
    return np.ascontiguousarray(result, dtype=np.float32)


def search_embedding() -> EmbeddingSettings:
    """The model's settings in the gateway: every core, up to 4, and 2 forward passes at once. The sections that embed
    in the background keep half the cores (`EmbeddingSettings.embedding_threads`), so that a query beside an ingest
    stays quick; the gateway embeds one need at a time and nothing in the background (its index is built once, then
    read from its cache). On 2 cores, every core took a quarter off a long need's model time against half of them, and
    a long need's passes run at once (`need_passes`) another tenth (`python -m benchmarks.bench_gateway` prints the
    latency). ONNX Runtime does not spin here: it was no slower beside another process's ingest."""
    from mcp_sections.shared.embeddings import EmbeddingSettings

    cores = max(1, min(4, os.cpu_count() or 1))
    return EmbeddingSettings(embedding_threads=cores, embedding_parallel_passes=2 if cores >= 2 else 1)


def query_texts(query: str) -> list[str]:
    """What is embedded of a need (`need.read_need`): its request, its head (the verb and its object) and its whole
    context, each with its material (paths, URLs, quoted text, code, errors) as the kind of thing it is."""
    need = read_need(query)
    return [need.request, need.head, need.context]


def query_vector(query: str, service: EmbeddingService) -> np.ndarray:
    """The normalised sum of the vectors of `query_texts` (a text repeated is embedded once; see `embed_texts`)."""
    import numpy as np

    texts = query_texts(query)
    unique = list(dict.fromkeys(texts))
    vectors = embed_texts(service.embedder, unique)
    vector = sum(texts.count(text) * vectors[row] for row, text in enumerate(unique))
    return vector / max(float(np.linalg.norm(vector)), 1e-12)


def embed_texts(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """The vectors of a need's few texts, in the forward passes `need_passes` chooses from their token counts (run at
    once when the embedder runs passes in parallel). A text's vector is the same alone or padded in a batch (the
    padding is masked out); without token counts (torch, an endpoint) one pass."""
    import numpy as np

    counts = embedder.token_counts(texts) if len(texts) > 1 else None
    if counts is None:
        return embedder.encode(texts)
    groups = need_passes(counts, embedder.parallel_passes)
    blocks = embedder.encode_passes([[texts[row] for row in group] for group in groups])
    vectors = np.empty((len(texts), blocks[0].shape[1]), dtype=np.float32)
    for group, block in zip(groups, blocks, strict=True):
        vectors[group] = block
    return vectors


def need_passes(counts: Sequence[int], at_once: int) -> list[list[int]]:
    """The texts (by their token counts) grouped into forward passes. One after the other (`at_once` 1, or a short need:
    its longest text under `PARALLEL_FROM_TOKENS`), those `forward_passes` chooses. At once, the longest text (the
    context) alone and the others in the passes `forward_passes` chooses for them, so that a long need takes about as
    long as its context: on 2 cores, 2 passes at once cut a long need's search by a tenth (p50 and p95), where a short
    need's one pass was as quick as its two at once."""
    if at_once < 2 or len(counts) < 2 or max(counts) < PARALLEL_FROM_TOKENS:
        return forward_passes(counts)
    longest = max(range(len(counts)), key=lambda row: counts[row])
    rest = [row for row in range(len(counts)) if row != longest]
    return [[longest], *([rest[at] for at in group] for group in forward_passes([counts[row] for row in rest]))]


def forward_passes(counts: Sequence[int]) -> list[list[int]]:
    """The texts (by their token counts) grouped into the forward passes that cost least. A pass pads every text to
    its longest, so a short head beside a long context costs as much as another context, and a pass has a fixed cost
    (`PASS_COST_TOKENS`): the texts, longest first, are cut where that saves the most (a need has three texts: four
    ways to cut them)."""
    order = sorted(range(len(counts)), key=lambda row: -counts[row])
    if len(order) < 2:
        return [order] if order else []

    def cost(groups: list[list[int]]) -> int:
        return sum(PASS_COST_TOKENS + len(group) * counts[group[0]] for group in groups)

    cuts = [
        [order[start:end] for start, end in pairwise((0, *chosen, len(order)))]
        for size in range(len(order))
        for chosen in combinations(range(1, len(order)), size)
    ]
    return min(cuts, key=cost)


@dataclass
class BuildTimes:
    """Seconds spent on the last build: reading the definitions, loading the model, embedding (or reading the
    cached vectors)."""

    definitions: float = 0.0
    model: float = 0.0
    vectors: float = 0.0
    embedded: int = 0  # passages sent to the model (0 when every vector came from the cache)


class ToolSearch:
    """The gateway's tool index: built in a worker thread on first need (or `start()`), rebuilt when a
    third-party section's tools become known; `search` ranks and says which sections it could not search."""

    def __init__(
        self,
        catalog: dict[str, SectionEntry],
        settings: Settings,
        embedding: EmbeddingSettings | None = None,
        shows: Callable[[str, str], bool] | None = None,
        own: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        """`shows(section, tool)`: whether the gateway's tool filters show a tool (hidden ones are never found);
        `own()`: the gateway's own tools its client is offered (default: all of them), found as section "gateway"."""
        self.catalog = catalog
        self.shows = shows
        self.own = own
        self.settings = settings
        self.embedding = embedding  # None: the suite's default model (all-MiniLM-L6-v2, local, ONNX)
        self.times = BuildTimes()
        self._index: ToolIndex | None = None
        self._fingerprint: tuple[str, ...] = ()
        self._service: EmbeddingService | None = None
        self._model_error: str | None = None
        self._lock = threading.Lock()
        self._model_lock = threading.Lock()  # one thread loads the model; the others wait for it
        self._built = threading.Event()  # the text index exists
        self._started = False
        self._broken: dict[str, str] = {}  # section id -> why its definitions could not be read

    # -- building ------------------------------------------------------------------------------------

    def start(self) -> None:
        """Build the index in a background thread (once)."""
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._build, name="tool-search-index", daemon=True).start()

    def _known(self) -> list[SectionEntry]:
        """Sections whose tool definitions are known without starting anything."""
        return [entry for entry in self.catalog.values() if not entry.load_error and self._definitions(entry)]

    def _definitions(self, entry: SectionEntry) -> list[dict[str, Any]] | None:
        """A built-in section's definitions (from its declaration); a third-party one's once it has run; None for a
        section whose definitions cannot be computed (the reason is kept for `unsearched`)."""
        if entry.id in self._broken:
            return None
        try:
            return entry.definitions(self.settings)
        except Exception as exc:  # one broken declaration must not keep the other sections out of the index
            logger.warning("tool search skips section %s: %r", entry.id, exc)
            self._broken[entry.id] = f"its tool definitions cannot be computed: {type(exc).__name__}: {exc}"
            return None

    def _fingerprint_of(self, entries: list[SectionEntry]) -> tuple[str, ...]:
        return tuple(f"{entry.id}:{len(self._definitions(entry) or [])}" for entry in entries)

    def _entries(self, sections: list[SectionEntry]) -> list[ToolEntry]:
        entries: list[ToolEntry] = []
        for entry in sections:
            declaration = entry.declaration
            examples = {spec.name: spec.examples for spec in declaration.specs} if declaration is not None else {}
            terms = self._search_terms(entry)
            entries += section_entries(entry.id, entry.description, self._definitions(entry) or [], examples, terms)
        return entries + own_entries()

    def _search_terms(self, entry: SectionEntry) -> dict[str, str]:
        """The declaration's `search_terms` from the section's settings (none if they cannot be read: the tools are
        still found by their text)."""
        declaration = entry.declaration
        if declaration is None or declaration.search_terms is None or declaration.settings_model is None:
            return {}
        try:
            return declaration.search_terms(self.settings.section_settings(declaration.settings_model, entry.id))
        except Exception as exc:
            logger.warning("tool search indexes no search terms for section %s: %r", entry.id, exc)
            return {}

    def _build(self) -> None:
        try:
            started = time.perf_counter()
            known = self._known()
            entries = self._entries(known)
            text_index = ToolIndex(entries)
            self.times.definitions = time.perf_counter() - started
            with self._lock:
                self._index, self._fingerprint = text_index, self._fingerprint_of(known)
            self._built.set()
            self._add_vectors()
        except Exception:  # the gateway keeps serving; find_tools reports the failure
            logger.exception("the tool search index could not be built")
            self._model_error = self._model_error or "the index could not be built (see the gateway's log)"
            self._built.set()

    def embedding_service(self) -> EmbeddingService | None:
        """The embedder with its vector cache, loaded (None, with the reason kept, when it cannot be)."""
        with self._model_lock:
            if self._service is None and self._model_error is None:
                self._load_model()
            return self._service

    def _load_model(self) -> None:
        started = time.perf_counter()
        try:
            from mcp_sections.shared.embeddings import (
                EMBEDDING_CACHE_SCHEMA,
                EmbeddingCache,
                EmbeddingService,
                get_embedder,
            )
            from mcp_sections.shared.store.sqlite import Database

            settings = self.embedding or search_embedding()
            embedder = get_embedder(settings, self.settings.cache_dir)
            if not embedder.load():
                self._model_error = embedder.describe()
                return
            cache = None
            try:
                cache = EmbeddingCache(Database(self.settings.cache_dir / CACHE_FILE, [EMBEDDING_CACHE_SCHEMA]))
            except Exception as exc:  # an unwritable cache directory: embed at every start instead
                logger.warning("tool search vectors are not cached: %r", exc)
            self._service = EmbeddingService(embedder, cache)
        except Exception as exc:  # no numpy, an unwritable cache directory...: BM25 still answers
            logger.warning("tool search runs on BM25 alone: %r", exc)
            self._model_error = f"{type(exc).__name__}: {exc}"
        finally:
            self.times.model = time.perf_counter() - started

    def _add_vectors(self) -> None:
        """Give the current index its vectors (loading the model first if needed); an index replaced meanwhile
        (a third-party section became known) gets them in turn."""
        service = self.embedding_service()
        while service is not None:
            with self._lock:
                index = self._index
            if index is None or index.vectors is not None:
                return
            started = time.perf_counter()
            calls = service.model_calls
            vectors = tool_vectors(index.entries, service)
            self.times.vectors = time.perf_counter() - started
            self.times.embedded = service.model_calls - calls
            with self._lock:
                if self._index is index:
                    self._index = index.with_vectors(vectors)
                    return

    def _refresh(self) -> None:
        """Rebuild when the known sections changed (a third-party one ran): the text part now, the vectors from the
        cache (and the model for the new tools), here once the model is loaded, else by the building thread."""
        known = self._known()
        fingerprint = self._fingerprint_of(known)
        if fingerprint == self._fingerprint:
            return
        index = ToolIndex(self._entries(known))
        with self._lock:
            self._index, self._fingerprint = index, fingerprint
        if self._service is not None:
            self._add_vectors()

    # -- searching -----------------------------------------------------------------------------------

    def index(self, wait_seconds: float = MODEL_WAIT_SECONDS) -> ToolIndex:
        """The current index, built if needed; waits up to `wait_seconds` for its vectors while the model loads."""
        self.start()
        self._built.wait()
        self._refresh()
        deadline = time.monotonic() + wait_seconds
        while self._pending_vectors() and time.monotonic() < deadline:
            time.sleep(0.05)
        with self._lock:
            if self._index is None:
                raise RuntimeError(self._model_error or "the tool search index is not built")
            return self._index

    def _pending_vectors(self) -> bool:
        with self._lock:
            missing = self._index is not None and self._index.vectors is None
        return missing and self._model_error is None

    def search(self, query: str, limit: int, sections: list[str] | None) -> tuple[list[Hit], Mode, str | None]:
        """Ranked hits, the mode used, and a note when the ranking is BM25 alone (and why)."""
        index = self.index()
        wanted = set(sections) if sections is not None else None
        vector = None
        note = None
        if index.vectors is not None:
            try:
                vector = self.embed_query(query)
            except Exception as exc:  # the model broke after loading: words still answer
                logger.warning("embedding a tool search query failed: %r", exc)
                note = f"BM25 alone: embedding the query failed ({type(exc).__name__})"
        elif self._model_error is not None:
            note = f"BM25 alone: {self._model_error}"
        else:
            note = f"BM25 alone: the embedding model is still loading after {MODEL_WAIT_SECONDS:g} s; retry shortly"
        hits = index.rank(query, vector, limit, wanted, shows=self._shown())
        return hits, ("hybrid" if vector is not None else "bm25"), note

    def _shown(self) -> Callable[[str, str], bool] | None:
        """Whether a tool may be found: the gateway's own tools it offers its client, a section's tools the filters
        show."""
        if self.own is None and self.shows is None:
            return None
        own = set(self.own()) if self.own is not None else None
        shows = self.shows

        def shown(section: str, name: str) -> bool:
            if section == GATEWAY_SECTION:
                return own is None or name in own
            return shows is None or shows(section, name)

        return shown

    def embed_query(self, query: str) -> np.ndarray | None:
        """The query's vector (see `query_vector`), or None without a model."""
        return query_vector(query, self._service) if self._service is not None else None

    def find(self, params: FindToolsInput) -> FindToolsResult:
        """The find_tools answer (blocking: call it from a worker thread)."""
        from .models import FindToolsResult

        if not re.search(r"\w", params.query):
            raise invalid_input("query holds no word: describe the need in plain words, e.g. 'read a file'.")
        hits, mode, note = self.search(params.query, params.limit, params.sections)
        return FindToolsResult.model_validate(
            {
                "tools": [
                    {
                        "section": hit.entry.section,
                        "name": hit.entry.name,
                        "summary": hit.entry.summary,
                        "score": round(hit.score, 4),
                        "inputSchema": hit.entry.input_schema,
                    }
                    for hit in hits
                ],
                "mode": mode,
                "note": note,
                "unsearched": [
                    {"section": section, "reason": reason} for section, reason in self.unsearched(params.sections)
                ],
            }
        )

    def unsearched(self, sections: list[str] | None = None) -> list[tuple[str, str]]:
        """(section, why) for every section (of `sections`) whose tools could not be searched."""
        result = []
        for entry in self.catalog.values():
            if sections is not None and entry.id not in sections:
                continue
            if entry.load_error:
                result.append((entry.id, f"cannot be loaded: {entry.load_error}"))
            elif entry.id in self._broken:
                result.append((entry.id, self._broken[entry.id]))
            elif not self._definitions(entry):
                result.append((entry.id, "third-party section not started yet: its tools are known once it runs"))
        return result
