"""The brain's code evaluation (issue #41): questions about three real code bases → the symbol or doc section.

The code bases are released sdists from PyPI (`benchmarks/data/brain_code_eval.json` names them: click, attrs,
marshmallow, each with its tests and docs), downloaded once into `<cache dir>/bench/sdists` with pip and never
committed. The real brain ingests each whole sdist into a fresh store, embeds it with the real model, and answers
every question the way `brain_search` answers a caller working in that project (no `projects` argument). Scoring is
per symbol: a code answer is the scope of that file and qualified name (`Class.method`); a doc answer is a node of
that file covering the section under that heading (the sections are found here, from the file, not from the brain's
parser). recall@1 and recall@5 are reported per kind (definition, usage, config, docs) and per split (dev: tuned on;
heldout: never looked at while tuning), with the misses.

The same run times, per project, the ingest until everything is searchable by meaning, beside the raw model encoding
the same texts (32 at a time, store order), so a slower machine shows in both. `second` ingests another tree into the
same brain first (a user working on two repositories): the questions then run with both projects in the brain.

Run: python -m benchmarks.bench_brain --eval [--second PATH] (prints the tables).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "brain_code_eval.json"
BLIND = tuple(DATA.with_name(f"brain_code_eval_blind{n}.json") for n in ("", "2", "3", "4", "5", "6"))
"""Six more code bases whose questions were written by people who never saw the ranking code or any result, each run
once when it was final: sqlparse (split `blind`), structlog (`blind2`), cattrs (`blind3`) and itsdangerous (`blind4`)
before the reranker (`servers/rag_ops/rerank.py`), which then learned from them; pyparsing (`blind5`) and tomlkit
(`blind6`) after it, never learned from."""
COLUMNS = {
    "dev": ("dev",),
    "heldout": ("heldout",),
    "blind 1-4": ("blind", "blind2", "blind3", "blind4"),
    "blind 5-6": ("blind5", "blind6"),
}
"""The splits each column of the per-kind table counts: tuned on, held out, blind and learned from by the reranker,
blind and never learned from."""
KINDS = ("definition", "usage", "config", "docs")
LIMIT = 10
_RST_ADORNMENT = re.compile(r"""^([=\-~^+*#"'`:.])\1{2,}\s*$""")
_ATX = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")


class SourceUnavailable(RuntimeError):
    """An sdist could not be downloaded (no access to PyPI)."""


@dataclass
class Answered:
    """One question asked: the rank of the first right result (None: not in the first `LIMIT`)."""

    id: str
    project: str
    kind: str
    split: str
    question: str
    rank: int | None
    top: list[str]


@dataclass
class Timing:
    """One project ingested until searchable by meaning, beside the raw model on the same texts."""

    project: str
    files: int
    nodes: int
    texts: int
    parse_seconds: float
    embed_seconds: float
    raw_model_seconds: float | None

    @property
    def searchable_seconds(self) -> float:
        return self.parse_seconds + self.embed_seconds


@dataclass
class EvalRun:
    answers: list[Answered]
    timings: list[Timing]
    second: str | None = None
    notes: list[str] = field(default_factory=list)


def sdist_cache(cache_dir: Path | None = None) -> Path:
    """Where the sdists are kept between runs: `<cache dir>/bench/sdists` (the suite's cache directory)."""
    if cache_dir is None:
        from mcp_sections.shared.settings.config import Settings

        cache_dir = Settings().cache_dir
    return Path(cache_dir) / "bench" / "sdists"


def fetch(package: str, version: str, cache: Path) -> Path:
    """The unpacked sdist of `package==version` in `cache`, downloaded with pip the first time."""
    root = cache / f"{package}-{version}"
    if root.is_dir():
        return root
    cache.mkdir(parents=True, exist_ok=True)
    spec = f"{package}=={version}"
    base = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", spec, "-d", str(cache)]
    attempts = [[*base, "--no-build-isolation"], base] if importlib.util.find_spec("setuptools") else [base]
    errors = ""
    for command in attempts:  # without isolation first (no throw-away build environment), then with it
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        errors = done.stderr.strip()[-300:]
        archive = cache / f"{package}-{version}.tar.gz"
        if done.returncode == 0 and archive.is_file():
            with tarfile.open(archive) as opened:
                opened.extractall(cache, filter="data")
            return root
    raise SourceUnavailable(f"pip download {spec} failed: {errors}")


def questions() -> list[dict[str, Any]]:
    """The projects of both data files, each with its questions."""
    return [project for path in (DATA, *BLIND) for project in json.loads(path.read_text(encoding="utf-8"))["projects"]]


# ---- the ground truth: sections found in the files themselves ------------------------------------------------


def sections_of(path: Path) -> list[tuple[str, int, int]]:
    """(heading, first line, last line) of each section of a Markdown or reStructuredText file, 1-based; a section
    runs to the line before the next heading of any level."""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    heads: list[tuple[str, int]] = []
    if path.suffix == ".md":
        fenced = False
        for index, line in enumerate(lines):
            if _FENCE.match(line):
                fenced = not fenced
            elif not fenced and (match := _ATX.match(line)):
                heads.append((match.group(2).strip(), index + 1))
    else:
        for index in range(1, len(lines)):
            title, underline = lines[index - 1], lines[index]
            titled = title.strip() and not title.startswith(" ") and not _RST_ADORNMENT.match(title)
            if titled and _RST_ADORNMENT.match(underline) and len(underline.rstrip()) >= len(title.rstrip()):
                overline = index >= 2 and _RST_ADORNMENT.match(lines[index - 2])
                heads.append((title.strip(), index - 1 if overline else index))  # 1-based
    out = []
    for position, (title, start) in enumerate(heads):
        end = heads[position + 1][1] - 1 if position + 1 < len(heads) else len(lines)
        out.append((title, start, end))
    return out


def is_answer(result: dict[str, Any], answer: dict[str, str], root: Path) -> bool:
    if result.get("relative_path") != answer["path"]:
        return False
    if "symbol" in answer:
        qualname = str((result.get("properties") or {}).get("qualname") or "").split("#", 1)[0]
        return result.get("label") == "Scope" and qualname == answer["symbol"]
    start, end = result.get("start_line"), result.get("end_line")
    if result.get("label") not in ("DocumentSection", "Chunk") or start is None or end is None:
        return False
    for title, first, last in sections_of(root / answer["path"]):
        if title == answer["section"]:
            overlap = min(end, last) - max(start, first) + 1
            if overlap >= 0.5 * (end - start + 1) or (start <= first and end >= last):
                return True
    return False


def describe(result: dict[str, Any]) -> str:
    qualname = (result.get("properties") or {}).get("qualname") or result.get("name")
    return f"{result.get('project_id')}:{result.get('relative_path')}:{qualname}"


# ---- the run -----------------------------------------------------------------------------------------------------


def evaluate(
    cache_dir: Path | None = None,
    *,
    second: Path | None = None,
    throughput: bool = True,
    only: Callable[[dict[str, Any]], bool] | None = None,
    progress: Callable[[str], None] | None = None,
    keep: Path | None = None,
    model: str | None = None,
    ask: bool = True,
) -> EvalRun:
    """Every project in a fresh brain of its own (with `second` ingested into it first), questions asked with the
    defaults of a caller working in the project. `only` keeps some projects (by their data entry); `keep` keeps the
    brains in that directory between runs (what is already ingested and embedded is not done again); `model` names
    another embedding model than the default (a sentence-transformers directory: keep its brains apart); without
    `ask`, the brains are only ingested and embedded (for a study that asks in its own way)."""
    say = progress or (lambda message: None)
    cache = sdist_cache(cache_dir)
    run = EvalRun([], [], str(second) if second else None)
    embedder = loaded_embedder(cache_dir or cache.parent, model)

    def open_brain(path: Path, roots: list[Path]) -> Any:
        return brain_at(path, roots, embedder)

    with tempfile.TemporaryDirectory() as directory:
        work = keep if keep is not None else Path(directory)
        seed = work / "second" / "brain.sqlite3"
        if second is not None:  # the other project, ingested and embedded once, then copied into every brain
            say(f"ingesting and embedding {second} (the second project)")
            brain = open_brain(seed, [second])
            try:
                brain.ingest_directory(str(second), "second")
                assert brain.generate_embeddings(["second"], 7200)["complete"]
            finally:
                brain.close()
        for project in questions():
            if only is not None and not only(project):
                continue
            root = fetch(project["package"], project["version"], cache)
            place = work / f"{project['id']}{'-second' if second else ''}"
            place.mkdir(parents=True, exist_ok=True)
            if second is not None and not (place / "brain.sqlite3").exists():
                shutil.copyfile(seed, place / "brain.sqlite3")
            brain = open_brain(place / "brain.sqlite3", [root] if second is None else [root, second])
            try:
                say(f"{project['id']}: ingesting {root.name}")
                run.timings.append(_ingest(brain, embedder, project["id"], root, throughput))
                brain.active = None  # the caller's root says which project it works in, not a switch_project
                if not ask:
                    continue
                say(f"{project['id']}: {len(project['questions'])} questions")
                for item in project["questions"]:
                    run.answers.append(_ask(brain, project["id"], root, item))
            finally:
                brain.close()
    return run


def loaded_embedder(cache_dir: Path, model: str | None = None) -> Any:
    """The default embedding model, or `model` (a sentence-transformers directory: on torch unless it is a BERT),
    loaded (the evaluation needs it)."""
    from mcp_sections.shared.embeddings import EmbeddingSettings, get_embedder

    settings = EmbeddingSettings(embedding_model=model) if model else EmbeddingSettings()
    embedder = get_embedder(settings, cache_dir)
    assert embedder.load(), embedder.describe()
    return embedder


def brain_at(path: Path, roots: list[Path], embedder: Any) -> Any:
    """The brain stored at `path`, answering with `embedder`, embedding only when asked (no background worker)."""
    from mcp_sections.servers.rag_ops.brain import Brain
    from mcp_sections.shared.brain.sqlite_backend import SQLiteBrainStore
    from mcp_sections.shared.embeddings import EmbeddingCache, EmbeddingService

    store = SQLiteBrainStore(path)
    service = EmbeddingService(embedder, EmbeddingCache(store.database))
    return Brain(store, roots, embedding_service=service, background_embeddings=False)


def _ingest(brain: Any, embedder: Any, project_id: str, root: Path, throughput: bool) -> Timing:
    started = time.perf_counter()
    report = brain.ingest_directory(str(root), project_id)
    parse_seconds = time.perf_counter() - started
    model = brain.model_key
    texts = [text for _, text, _ in brain.store.pending_embeddings(model, 1_000_000, [project_id])]
    raw = None
    if throughput and texts:  # nothing to embed (a kept brain): no model time to compare with
        embedder.encode(texts[:32])  # warm-up, so that neither measurement pays it
        started = time.perf_counter()
        for start in range(0, len(texts), 32):
            embedder.encode(texts[start : start + 32])
        raw = time.perf_counter() - started
    started = time.perf_counter()
    done = brain.generate_embeddings([project_id], 3600)
    embed_seconds = time.perf_counter() - started
    assert done["complete"], done
    return Timing(project_id, report.files_scanned, report.node_count, len(texts), parse_seconds, embed_seconds, raw)


def _ask(brain: Any, project_id: str, root: Path, item: dict[str, Any]) -> Answered:
    query = item["question"]
    # a search without projects answers from the caller's project (issue #41); before, a project had to be named
    ids = brain.search_scope(None, roots=[str(root)]).project_ids if hasattr(brain, "search_scope") else [project_id]
    found = brain.search(query, project_ids=ids, types=None, semantic=True, limit=LIMIT)["results"]
    rank = next(
        (i for i, result in enumerate(found, 1) if any(is_answer(result, a, root) for a in item["answers"])), None
    )
    return Answered(item["id"], project_id, item["kind"], item["split"], query, rank, [describe(r) for r in found[:5]])


# ---- the tables ----------------------------------------------------------------------------------------------------


def recall(answers: list[Answered], k: int) -> float:
    return sum(a.rank is not None and a.rank <= k for a in answers) / len(answers) if answers else 0.0


def kind_rows(answers: list[Answered]) -> list[list[Any]]:
    """Per kind and column (`COLUMNS`): count, recall@1, recall@5 (and the totals)."""
    rows = []
    for kind in (*KINDS, "all"):
        mine = [a for a in answers if kind in ("all", a.kind)]
        row: list[Any] = [kind]
        for splits in (*COLUMNS.values(), None):
            part = [a for a in mine if splits is None or a.split in splits]
            row += [len(part), f"{recall(part, 1):.2f}", f"{recall(part, 5):.2f}"]
        rows.append(row)
    return rows


def misses(answers: list[Answered]) -> list[str]:
    return [
        f"[{a.split}] {a.id} ({a.kind}) rank {a.rank or f'>{LIMIT}'}: {a.question!r} → {', '.join(a.top[:3])}"
        for a in answers
        if a.rank != 1
    ]


def cache_dir_from_env() -> Path | None:
    value = os.environ.get("MCP_SECTIONS_CACHE_DIR")
    return Path(value) if value else None
