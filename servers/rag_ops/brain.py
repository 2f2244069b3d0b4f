"""The brain manager: projects registry, context resolution, incremental ingest, embeddings, search.

Plain Python over a `BrainStore` (no MCP import); the section's tools are thin wrappers around it.

Context resolution (`resolve_context`), for a path inside the configured roots:
- inside (or equal to) a registered project's root → that project, incrementally (a sub-path only
  touches that sub-tree); equal to the root → `already-ingested` (refresh);
- otherwise a quick-ingest project with a generated namespace (`<dirname>-<hash6>`, auto-cleanup);
- registered projects whose root lies inside the ingested tree are excluded from it.

Embeddings: nodes carry a compact `embed_text`; a background worker embeds pending nodes in small
batches after each ingest (through the shared `EmbeddingService`, whose (model, content-hash) cache
means identical text is never embedded twice), so an ingest is searchable by text at once and by
meaning soon after. Without a model, every search falls back to text search and says so.

Completion: an ingest tool embeds what it wrote before it answers (`embed_for`, for as long as the call may take)
and answers with what is searchable now (`searchable`: "text only for 696 of 1,240: 544 embedded"); what is left goes
on in the background after the call, and is still pending in the store if the process stops: the next start embeds it.
An ingest cut short (cancelled, the client gone, the process stopped) leaves its project `interrupted` (or
`ingesting` after a kill); the next start ingests it again from its root (`resume_interrupted`), unchanged files
being skipped by their hash.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_sections.servers.rag_ops.search import BrainSearch
from mcp_sections.shared.brain.embedding_jobs import Progress
from mcp_sections.shared.brain.model import (
    Node,
    Project,
    slugify,
    text_hash,
    valid_project_id,
)
from mcp_sections.shared.brain.web_pages import INLINE_MTIME, store_web_page
from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure, invalid_input, not_found, permission_denied

logger = logging.getLogger("mcp_sections.rag_ops")


SECTION_ID = "rag_ops"  # named in the brain's messages: `mcp-sections reembed rag_ops`
FLUSH_FILES = 40
FLUSH_SECONDS = 0.5
PROGRESS_SECONDS = 0.2
SNIPPETS_PROJECT = "snippets"
NODE_ID = re.compile(r"[0-9a-f]{24}")  # `shared.brain.model.node_id`
MAX_CANDIDATES = 10  # nodes listed when a name is ambiguous or not found


@dataclass
class IngestReport:
    project_id: str
    project_type: str
    context: str
    root: str
    path: str
    files_scanned: int = 0
    files_unchanged: int = 0
    files_added: list[str] = field(default_factory=list)
    files_changed: list[str] = field(default_factory=list)
    files_removed: list[str] = field(default_factory=list)
    nodes_written: int = 0
    excluded_projects: list[str] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    node_count: int = 0
    embeddings_pending: int = 0
    seconds: float = 0.0


INTERRUPTED = ("ingesting", "interrupted")  # project statuses of an ingest that did not end


@dataclass
class Searchable:
    """What a search finds of a project now: all its text once its ingest ended, and by meaning what is embedded."""

    project_id: str
    ingest: str  # complete | ingesting | interrupted
    meaning: str  # complete | partial | disabled | unavailable
    embeddable: int  # nodes with a text to embed
    pending: int  # of those, still without a vector
    reason: str | None = None  # why search by meaning is unavailable

    @property
    def embedded(self) -> int:
        return self.embeddable - self.pending

    @property
    def complete(self) -> bool:
        return self.ingest == "complete" and self.meaning in ("complete", "disabled")

    def message(self) -> str:
        if self.ingest == "complete":
            text = "searchable by text: all of it"
        elif self.ingest == "ingesting":
            text = "being ingested: searchable by text as far as it got"
        else:
            text = (
                "the ingest was interrupted: searchable by text as far as it got; it resumes at the next start, or "
                "call ingest_directory again"
            )
        if self.meaning == "disabled":
            meaning = "search by meaning is off in this configuration (text only)"
        elif self.meaning == "unavailable":
            meaning = f"text only: search by meaning is unavailable ({self.reason})"
        elif self.pending == 0:
            meaning = f"by meaning: all {self.embeddable:,} nodes embedded"
        else:
            meaning = (
                f"text only for {self.pending:,} of {self.embeddable:,} nodes ({self.embedded:,} embedded); the rest "
                "is being embedded in the background, after this call too and after a restart (list_projects shows "
                "it)"
            )
        return f"{text}; {meaning}."

    def as_dict(self) -> dict[str, Any]:
        return {
            "ingest": self.ingest,
            "meaning": self.meaning,
            "embeddable": self.embeddable,
            "embedded": self.embedded,
            "pending": self.pending,
            "complete": self.complete,
            "message": self.message(),
        }


@dataclass(frozen=True)
class SearchScope:
    """The projects a search covers (None: all), and a sentence saying why and how to widen."""

    project_ids: list[str] | None
    note: str | None = None


WIDEN = "pass all_projects=true to brain_search (or projects=[...]) to search every project"


@dataclass
class ProjectSetup:
    project: Project
    created: bool
    report: IngestReport
    embeddings: dict[str, Any] | None = None
    embeddings_note: str | None = None


class Brain(BrainSearch):
    """One brain over a store; thread-safe (tools run in worker threads)."""

    def __init__(
        self,
        store: Any,
        roots: Sequence[Path],
        *,
        embedding_service: Any | None = None,
        max_file_bytes: int = 1_000_000,
        max_files: int = 20_000,
        retention_days: float = 30.0,
        background_embeddings: bool = True,
        embedding_wait_seconds: float = 30.0,
        private: Sequence[Path] = (),
    ) -> None:
        """`private`: the suite's own state (`Settings.own_state_paths()`), never read nor ingested."""
        self.store = store
        self.roots = [Path(os.path.realpath(r)) for r in roots]
        self.embeddings = embedding_service
        self.max_file_bytes = max_file_bytes
        self.max_files = max_files
        self.retention_days = retention_days
        self.active: str | None = None
        self.loaded: set[str] = set()
        self._guard = PathGuard(self.roots, private=private)
        self._ingest_lock = threading.Lock()
        self._executor: Any = None
        self._executor_lock = threading.Lock()
        self._closing = threading.Event()
        self._resumer: threading.Thread | None = None
        self._heal()
        self.start_embedding_jobs(
            owner=SECTION_ID, background=background_embeddings, wait_seconds=embedding_wait_seconds
        )

    # ---- lifecycle ------------------------------------------------------------------------------
    def close(self) -> None:
        self._closing.set()  # an ingest resumed in the background stops at its next file (and stays interrupted)
        if self._resumer is not None:
            self._resumer.join(timeout=60)
        self.stop_embedding_jobs()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        self.store.close()

    def _heal(self) -> None:
        """After a crash: recompute derived edges and counts of projects left mid-ingest."""
        for project in self.store.list_projects():
            if project.needs_relink or project.status in INTERRUPTED:
                self.store.relink(project.id)
                self.store.refresh_counts(project.id)

    def interrupted(self) -> list[Project]:
        """Directory projects whose last ingest did not end (cancelled, the client gone, the process stopped)."""
        return [p for p in self._dir_projects() if p.status in INTERRUPTED and os.path.isdir(p.root)]

    def resume_interrupted(self) -> list[str]:
        """Ingest again, from their roots, the projects whose last ingest did not end; their ids."""
        resumed = []
        for project in self.interrupted():
            if self._closing.is_set():
                break
            try:
                self.ingest_tree(project, "", "resumed", self._stop_when_closing)
            except ToolFailure as failure:
                logger.warning("resuming the ingest of %s failed: %s", project.id, failure.message)
                continue
            resumed.append(project.id)
            logger.info("resumed the interrupted ingest of %s", project.id)
        return resumed

    def resume_in_background(self) -> None:
        """`resume_interrupted` in a daemon thread (at a server's start), when there is anything to resume."""
        if not self.interrupted():
            return

        def resume() -> None:
            try:
                self.resume_interrupted()
            except _Closing:
                pass
            except Exception:  # the next start tries again
                logger.warning("resuming interrupted ingests failed", exc_info=True)

        self._resumer = threading.Thread(target=resume, name="brain-resume", daemon=True)
        self._resumer.start()

    def _stop_when_closing(self, done: int, total: int, message: str) -> None:
        if self._closing.is_set():
            raise _Closing

    # ---- what is searchable ---------------------------------------------------------------------
    def searchable(self, project_id: str) -> Searchable:
        """What a search finds of the project now."""
        project = self.project(project_id)
        ingest = project.status if project.status in INTERRUPTED else "complete"
        embeddable = int(self.store.schema([project.id])["embeddable"])
        if self.embeddings is None or self.model_key is None:
            return Searchable(project.id, ingest, "disabled", embeddable, embeddable)
        pending = int(self.store.count_pending(self.model_key, [project.id]))
        status = str(self.embeddings.embedder.status)
        if pending and (status == "failed" or self.other_model() is not None):
            return Searchable(project.id, ingest, "unavailable", embeddable, pending, self.embedding_status())
        return Searchable(project.id, ingest, "partial" if pending else "complete", embeddable, pending)

    def embed_for(self, project_ids: Sequence[str], seconds: float, progress: Progress | None = None) -> str | None:
        """Embed the projects' pending nodes in this thread for up to `seconds` (what is left goes on in the
        background); None, or why nothing could be embedded (no model: text search works)."""
        if self.embeddings is None:
            return "embeddings are disabled in this configuration: text search only."
        if seconds <= 0 or self.store.count_pending(self.model_key, list(project_ids)) == 0:
            return None
        try:
            self.generate_embeddings(list(project_ids), seconds, progress)
        except ToolFailure as failure:
            return failure.message
        finally:
            self.wake()
        return None

    # ---- paths ----------------------------------------------------------------------------------
    def resolve_path(self, path: str, *, must_exist: bool = True) -> Path:
        return self._guard.resolve(path, purpose="read" if must_exist else "create")

    # ---- projects -------------------------------------------------------------------------------
    def project(self, project_id: str) -> Project:
        project = self.store.get_project(project_id)
        if project is None:
            known = ", ".join(p.id for p in self.store.list_projects()[:20]) or "none yet"
            raise not_found(f"no project {project_id!r}; known projects: {known} (see list_projects).")
        return project

    def _dir_projects(self) -> list[Project]:
        return [p for p in self.store.list_projects() if p.type != "web-crawl" and os.path.isabs(p.root)]

    def owner_of(self, target: str) -> Project | None:
        """The deepest registered directory project containing `target`."""
        owners = [p for p in self._dir_projects() if _inside(target, p.root)]
        return max(owners, key=lambda p: len(p.root)) if owners else None

    def create_project(self, name: str, path: str, *, auto_cleanup: bool = False) -> tuple[Project, bool]:
        target = self.resolve_path(path)
        if not target.is_dir():
            raise invalid_input(f"{path!r} is not a directory; a project is rooted at a directory.")
        root = str(target)
        for existing in self._dir_projects():
            if existing.root == root:
                existing.name = name
                existing.type = "project"
                existing.auto_cleanup = auto_cleanup
                self.store.upsert_project(existing)
                return existing, False
        pid = slugify(name)
        if self.store.get_project(pid) is not None:
            raise invalid_input(
                f"a project named {pid!r} already exists at another path; choose another name or use load_project."
            )
        project = Project(id=pid, name=name, root=root, type="project", auto_cleanup=auto_cleanup)
        self.store.upsert_project(project)
        self._detach_from_parent(project)
        return project, True

    def _detach_from_parent(self, project: Project) -> None:
        """A new project inside another project's tree: its files leave the parent (no duplicates)."""
        for parent in self._dir_projects():
            if parent.id != project.id and _inside(project.root, parent.root) and parent.root != project.root:
                rel = _rel(project.root, parent.root)
                if self.store.remove_paths(parent.id, [], prefixes=[rel]):
                    self.store.relink(parent.id)
                    self.store.refresh_counts(parent.id)

    def touch(self, project_id: str) -> None:
        self.store.update_project(project_id, last_accessed=time.time())

    def load_project(self, project_id: str) -> dict[str, Any]:
        project = self.project(project_id)
        self.touch(project.id)
        self.loaded.add(project.id)
        if self.active is None:
            self.active = project.id
        vectors = 0
        if self.model_key and hasattr(self.store, "preload"):
            vectors = self.store.preload(self.model_key, project.id)
        stale = self.stale_files(project)
        return {"project": project, "vectors_loaded": vectors, "stale_files": stale}

    def unload_project(self, project_id: str) -> Project:
        project = self.project(project_id)
        self.loaded.discard(project.id)
        if self.active == project.id:
            self.active = None
        if hasattr(self.store, "unload"):
            self.store.unload(project.id)
        return project

    def switch_project(self, project_id: str) -> Project:
        project = self.project(project_id)
        self.loaded.add(project.id)
        self.active = project.id
        self.touch(project.id)
        return project

    def stale_files(self, project: Project) -> int | None:
        """How many files changed on disk since the last ingest (None for non-directory projects)."""
        from mcp_sections.shared.brain import parsing  # walking and parsers: only ingest and staleness need them

        if project.type == "web-crawl" or not os.path.isdir(project.root):
            return None
        records = {k: v for k, v in self.store.file_records(project.id).items() if v.mtime_ns != INLINE_MTIME}
        stale = 0
        excluded = self._excluded_children(project)
        walk = parsing.walk_tree(
            project.root,
            excluded=excluded,
            hidden=self._guard.private_inside_roots(),
            max_file_bytes=self.max_file_bytes,
        )
        for seen, entry in enumerate(walk, start=1):
            record = records.pop(entry.rel, None)
            if record is None:
                data = _read(entry.path, self.max_file_bytes)
                stale += data is not None and not parsing.looks_binary(data) and not parsing.holds_private_key(data)
            elif record.size != entry.size or record.mtime_ns != entry.mtime_ns:
                stale += 1
            if seen > self.max_files:
                break
        return stale + len(records)

    def _excluded_children(self, project: Project) -> list[str]:
        return [
            _rel(other.root, project.root)
            for other in self._dir_projects()
            if other.id != project.id and other.root != project.root and _inside(other.root, project.root)
        ]

    # ---- context resolution and ingest ----------------------------------------------------------
    def resolve_context(self, path: str, project_name: str | None = None) -> tuple[Project, str, str]:
        """(project, relative start path, context) for an ingest of `path`."""
        target = self.resolve_path(path)
        target_text = str(target)
        if project_name is not None:
            pid = slugify(project_name)
            existing = self.store.get_project(pid)
            if existing is not None:
                if existing.type != "web-crawl" and _inside(target_text, existing.root):
                    return existing, _rel(target_text, existing.root), "named-project"
                raise invalid_input(
                    f"project {pid!r} is rooted at {existing.root}, which does not contain {path!r}; "
                    "choose another project_name, or omit it to resolve the context automatically."
                )
            if not target.is_dir():
                raise invalid_input(f"{path!r} is not a directory; a new project is rooted at a directory.")
            owner = self.owner_of(target_text)
            if owner is not None and owner.root == target_text:
                owner.name, owner.type, owner.auto_cleanup = project_name, "project", False
                self.store.upsert_project(owner)
                return owner, "", "already-ingested"
            project = Project(id=pid, name=project_name, root=target_text, type="project")
            self.store.upsert_project(project)
            self._detach_from_parent(project)
            return project, "", "new-project"
        owner = self.owner_of(target_text)
        if owner is not None:
            if owner.root == target_text:
                return owner, "", "already-ingested"
            return owner, _rel(target_text, owner.root), "subdir-of-project"
        if not target.is_dir():
            raise invalid_input(
                f"{path!r} is a file outside every registered project; ingest its directory, or pass the content "
                "to ingest_code."
            )
        digest = hashlib.sha1(target_text.encode("utf-8", "surrogatepass")).hexdigest()[:6]
        pid = f"{slugify(target.name or 'root', 40)}-{digest}"
        project = Project(
            id=pid,
            name=target.name or target_text,
            root=target_text,
            type="quick-ingest",
            auto_cleanup=True,
            retention_days=self.retention_days,
        )
        self.store.upsert_project(project)
        self._detach_from_parent(project)
        return project, "", "quick-ingest"

    def setup_project(
        self, path: str, name: str | None, embed_seconds: float, progress: Progress | None = None
    ) -> ProjectSetup:
        """Register (or refresh) a project, ingest it, make it active, embed it for up to `embed_seconds`."""
        target = self.resolve_path(path)
        project, created = self.create_project(name or target.name, str(target))
        report = self.ingest_tree(project, "", "new-project" if created else "already-ingested", progress)
        self.switch_project(project.id)
        setup = ProjectSetup(project, created, report)
        if self.embeddings is None:
            setup.embeddings_note = "embeddings are disabled in this configuration: text search only."
        elif embed_seconds > 0 and report.embeddings_pending:
            try:
                setup.embeddings = self.generate_embeddings(
                    [project.id], embed_seconds, after_files(progress, report.files_scanned)
                )
            except ToolFailure as failure:
                setup.embeddings_note = failure.message
        self.wake()
        return setup

    def ingest_directory(
        self, path: str, project_name: str | None = None, progress: Progress | None = None
    ) -> IngestReport:
        project, start_rel, context = self.resolve_context(path, project_name)
        return self.ingest_tree(project, start_rel, context, progress)

    def ingest_tree(
        self, project: Project, start_rel: str = "", context: str = "refresh", progress: Progress | None = None
    ) -> IngestReport:
        from mcp_sections.shared.brain import parsing  # walking and parsers: only ingest and staleness need them

        started = time.perf_counter()
        report = IngestReport(
            project.id,
            project.type,
            context,
            project.root,
            os.path.join(project.root, start_rel) if start_rel else project.root,
        )
        with self._ingest_lock:
            self.store.update_project(project.id, status="ingesting", last_accessed=time.time())
            stats = parsing.WalkStats()
            report.excluded_projects = self._excluded_children(project)
            excluded = [_rel(os.path.join(project.root, e), project.root) for e in report.excluded_projects]
            records = self.store.file_records(project.id, start_rel)
            start_abs = os.path.join(project.root, start_rel) if start_rel else project.root
            if os.path.isfile(start_abs):
                info = os.stat(start_abs)
                entries = [_single_entry(start_abs, start_rel, info)]
            else:
                entries = []
                for entry in parsing.walk_tree(
                    project.root,
                    start_rel,
                    excluded=excluded,
                    hidden=self._guard.private_inside_roots(),
                    max_file_bytes=self.max_file_bytes,
                    stats=stats,
                ):
                    entries.append(entry)
                    if len(entries) > self.max_files:
                        raise ToolFailure(
                            ErrorCode.MAX_LIMIT_EXCEEDED,
                            f"{report.path} holds more than {self.max_files} ingestible files; ingest a "
                            "sub-directory, add a .gitignore, or raise max_files in [sections.rag_ops].",
                        )
            total = len(entries)
            report.files_scanned = total
            batch: list[Any] = []
            touched: list[tuple[str, int, int]] = []
            last_flush = last_progress = time.monotonic()

            def flush() -> None:
                nonlocal batch, last_flush
                if batch:
                    self.store.replace_files(project.id, batch)
                    report.nodes_written += sum(len(p.nodes) for p in batch)
                    batch = []
                last_flush = time.monotonic()

            try:
                if progress is not None:
                    progress(0, total, f"scanning {total} files of {project.id}")
                for done, entry in enumerate(entries, start=1):
                    record = records.pop(entry.rel, None)
                    if record is not None and record.size == entry.size and record.mtime_ns == entry.mtime_ns:
                        report.files_unchanged += 1
                    else:
                        data = _read(entry.path, self.max_file_bytes)
                        binary = data is not None and parsing.looks_binary(data)
                        if data is None or binary or parsing.holds_private_key(data):
                            stats.skipped_binary += binary
                            stats.skipped_secret += data is not None and not binary
                            if record is not None:
                                records[entry.rel] = record  # it is no longer ingestible: removed below
                        else:
                            digest = text_hash(data)
                            if record is not None and record.hash == digest:
                                report.files_unchanged += 1
                                touched.append((entry.rel, entry.size, entry.mtime_ns))
                            else:
                                batch.append(parsing.parse_file(project.id, entry.rel, data, entry.mtime_ns))
                                (report.files_changed if record is not None else report.files_added).append(entry.rel)
                    now = time.monotonic()
                    if len(batch) >= FLUSH_FILES or (batch and now - last_flush > FLUSH_SECONDS):
                        flush()
                    if progress is not None and (now - last_progress > PROGRESS_SECONDS or done == total):
                        last_progress = now
                        new = len(report.files_added) + len(report.files_changed)
                        progress(done, total, f"{done}/{total} files ({new} new or changed)")
                flush()
            except BaseException:  # cancelled (the progress callback raised) or failed: keep what was parsed, and
                flush()  # the next ingest goes on from there (the next start resumes an interrupted one)
                self.store.refresh_counts(project.id)
                self.store.update_project(project.id, status="interrupted")
                raise
            if touched:
                self.store.update_file_stats(project.id, touched)
            removed = [rel for rel, rec in records.items() if rec.mtime_ns != INLINE_MTIME]
            if removed:
                self.store.remove_paths(project.id, removed)
                report.files_removed = sorted(removed)
            current = self.store.get_project(project.id)
            if current is not None and current.needs_relink:
                self.store.relink(project.id)
            report.node_count = self.store.refresh_counts(project.id)
            now_wall = time.time()
            self.store.update_project(project.id, status="ready", last_ingest=now_wall, last_accessed=now_wall)
            report.skipped = stats.as_dict()
        if self.model_key:
            report.embeddings_pending = self.store.count_pending(self.model_key, [project.id])
        self.wake()
        report.seconds = round(time.perf_counter() - started, 3)
        return report

    def ingest_code(
        self, content: str, file_path: str, project_id: str | None = None, language: str | None = None
    ) -> tuple[Project, Any]:
        from mcp_sections.shared.brain import parsing  # walking and parsers: only ingest and staleness need them

        rel = _clean_rel(file_path)
        if parsing.is_secret_name(rel.rsplit("/", 1)[-1]) or parsing.holds_private_key(
            content.encode("utf-8", "surrogatepass")
        ):
            raise permission_denied(
                "this content looks like a secret (a key file name or a private key block); it is never ingested."
            )
        if language is not None:
            extension = next((ext for ext, lang in parsing.LANGUAGES.items() if lang == language), None)
            if extension is None:
                raise invalid_input(
                    f"unknown language {language!r}; use one of {sorted(set(parsing.LANGUAGES.values()))}."
                )
            if not rel.endswith(extension) and parsing.LANGUAGES.get(os.path.splitext(rel)[1]) != language:
                rel = rel + extension
        pid = project_id or self.active
        if pid is None:
            pid = SNIPPETS_PROJECT
            if self.store.get_project(pid) is None:
                self.store.upsert_project(
                    Project(
                        id=pid,
                        name="Inline snippets",
                        root="inline://snippets",
                        type="quick-ingest",
                        auto_cleanup=True,
                        retention_days=self.retention_days,
                    )
                )
        project = self.project(pid)
        data = content.encode("utf-8", "surrogatepass")
        parsed = parsing.parse_file(project.id, rel, data, INLINE_MTIME)
        with self._ingest_lock:
            self.store.replace_files(project.id, [parsed])
            self.store.relink(project.id)
            self.store.refresh_counts(project.id)
            self.store.update_project(project.id, last_accessed=time.time(), status="ready")
        self.wake()
        return project, parsed

    def ingest_web_page(
        self, url: str, title: str, text: str, links: Sequence[str] = (), project_id: str | None = None
    ) -> tuple[Project, Any]:
        """A fetched web page as a WebPage node (`shared.brain.web_pages`), embedded in the background."""
        with self._ingest_lock:
            pid, parsed = store_web_page(
                self.store, url, title, text, links, project_id, retention_days=self.retention_days
            )
        self.wake()
        return self.project(pid), parsed

    # ---- forgetting -----------------------------------------------------------------------------
    def forget_path(self, path: str) -> dict[str, Any]:
        text = path.strip()
        if not text or text in (".", "/", "~", "*", "**"):
            raise invalid_input("refusing to forget an empty or root-matching pattern; give one file or directory.")
        if any(ch in text for ch in "*?[") and not text.startswith(("http://", "https://")):
            raise invalid_input("forget_path takes a literal path, not a glob pattern.")
        removed_nodes = 0
        affected: list[str] = []
        deleted_projects: list[str] = []
        if text.startswith(("http://", "https://")):
            for project in self.store.list_projects():
                if project.type != "web-crawl":
                    continue
                if project.root.rstrip("/") == text.rstrip("/"):
                    removed_nodes += self.store.delete_project(project.id)
                    deleted_projects.append(project.id)
                else:
                    count = self.store.remove_paths(project.id, [text])
                    if count:
                        removed_nodes += count
                        affected.append(project.id)
        else:
            target = str(self.resolve_path(text, must_exist=False))
            if any(_inside(str(root), target) for root in self.roots):
                raise permission_denied(
                    f"{path!r} is (or contains) an allowed root; forgetting it would erase the whole brain. "
                    "Give a project, directory or file inside a root."
                )
            for project in self._dir_projects():
                if _inside(project.root, target):
                    removed_nodes += self.store.delete_project(project.id)
                    deleted_projects.append(project.id)
                    self.loaded.discard(project.id)
                    if self.active == project.id:
                        self.active = None
                elif _inside(target, project.root):
                    rel = _rel(target, project.root)
                    count = self.store.remove_paths(project.id, [rel], prefixes=[rel])
                    if count:
                        removed_nodes += count
                        affected.append(project.id)
        for pid in affected:
            self.store.relink(pid)
            self.store.refresh_counts(pid)
        return {"removed_nodes": removed_nodes, "projects_changed": affected, "projects_deleted": deleted_projects}

    def gc(self, *, dry_run: bool = False, remove_missing: bool = False) -> dict[str, Any]:
        now = time.time()
        expired, missing = [], []
        for project in self.store.list_projects():
            if project.auto_cleanup and now - project.last_accessed > project.retention_days * 86400:
                expired.append(project.id)
            elif project.type != "web-crawl" and os.path.isabs(project.root) and not os.path.isdir(project.root):
                missing.append(project.id)
        result: dict[str, Any] = {"expired_projects": expired, "missing_root_projects": missing, "dry_run": dry_run}
        if dry_run:
            return result
        removed = 0
        for pid in expired + (missing if remove_missing else []):
            removed += self.store.delete_project(pid)
            self.loaded.discard(pid)
            if self.active == pid:
                self.active = None
        result["removed_nodes"] = removed
        result["orphans_removed"] = self.store.gc()
        return result

    # ---- reading --------------------------------------------------------------------------------
    def project_ids(self, requested: Sequence[str] | None) -> list[str] | None:
        if not requested:
            return None
        for pid in requested:
            self.project(pid)
        return list(dict.fromkeys(requested))

    def search_scope(
        self, requested: Sequence[str] | None, *, all_projects: bool = False, roots: Sequence[str] | None = None
    ) -> SearchScope:
        """What a search covers: the projects asked for; everything with `all_projects`; else the project the caller
        works in: the active one (switch_project, setup_project), else the deepest project holding one of the caller's
        `roots` (its MCP roots, else the server's), else the projects inside those roots; else everything."""
        if requested:
            return SearchScope(self.project_ids(requested))
        if all_projects:
            return SearchScope(None)
        if self.active is not None and self.store.get_project(self.active) is not None:
            return SearchScope([self.active], f"searched the active project {self.active}; {WIDEN}.")
        places = [os.path.realpath(r) for r in (roots if roots is not None else [str(r) for r in self.roots])]
        holders = [owner for owner in (self.owner_of(place) for place in places) if owner is not None]
        if holders:
            ids = list(dict.fromkeys(p.id for p in holders))
            return SearchScope(ids, f"searched {', '.join(ids)}, the project of your root; {WIDEN}.")
        inside = [p.id for p in self._dir_projects() if any(_inside(p.root, place) for place in places)]
        if inside and len(inside) < len(self.store.list_projects()):
            return SearchScope(inside, f"searched the projects under your root ({', '.join(inside)}); {WIDEN}.")
        return SearchScope(None)

    def resolve_node(self, reference: str, project_id: str | None = None, label: str | None = None) -> Node:
        """The node `reference` names: an id (24 hex characters), else an exact name as `query_entities` matches it,
        narrowed by project and label. NOT_FOUND suggests names that contain it; a name several nodes share fails
        with INVALID_INPUT listing them and their ids."""
        from mcp_sections.shared.brain.model import EntityFilter

        if NODE_ID.fullmatch(reference):
            found = self.store.get_nodes([reference])
            if found:
                return found[0]
        ids = self.project_ids([project_id] if project_id else None)
        nodes, total = self.store.query_entities(
            EntityFilter(label=label, name=reference, project_ids=ids, limit=MAX_CANDIDATES)
        )
        if total == 1:
            return nodes[0]
        where = (f" in project {project_id!r}" if project_id else "") + (f" with label {label}" if label else "")
        if total > 1:
            raise invalid_input(
                f"{total} nodes{where} are named {reference!r}: {_candidates(nodes)}"
                f"{'; …' if total > len(nodes) else ''}. Pass one of these ids as node_id"
                + (", or narrow with project or label." if not (project_id and label) else ".")
            )
        similar, _ = self.store.query_entities(
            EntityFilter(label=label, name=reference, name_match="contains", project_ids=ids, limit=MAX_CANDIDATES)
        )
        hint = f" Names that contain it: {_candidates(similar)}." if similar else ""
        raise not_found(
            f"no node{where} has the id or the name {reference!r}.{hint} Get ids and exact names from brain_search, "
            "semantic_search or query_entities (name_match='contains')."
        )

    def describe(self, node: Node, projects: dict[str, Project] | None = None, score: float | None = None) -> dict:
        projects = projects if projects is not None else {p.id: p for p in self.store.list_projects()}
        project = projects.get(node.project_id)
        props = dict(node.props)
        if node.label == "Project" and project is not None:
            props.update(project.to_dict())
        absolute = node.path
        if project is not None and node.path and project.type != "web-crawl" and os.path.isabs(project.root):
            absolute = os.path.join(project.root, *node.path.split("/"))
        return {
            "id": node.id,
            "label": node.label,
            "name": node.name,
            "project_id": node.project_id,
            "project_type": project.type if project else None,
            "project_root": project.root if project else None,
            "path": absolute,
            "relative_path": node.path,
            "start_line": node.start_line,
            "end_line": node.end_line,
            "kind": props.get("kind"),
            "properties": {k: v for k, v in props.items() if v not in (None, "", [])},
            "score": score,
        }

    def schema(self, project_id: str | None = None) -> dict[str, Any]:
        ids = self.project_ids([project_id] if project_id else None)
        schema = self.store.schema(ids)
        schema["projects"] = len(ids) if ids is not None else len(self.store.list_projects())
        schema["embeddings_pending"] = self.store.count_pending(self.model_key, ids) if self.model_key else None
        schema["backend"] = self.store.backend
        schema["embedding_model"] = self.model_key
        schema["embedding_status"] = self.embedding_status()
        return schema


# ---- helpers -------------------------------------------------------------------------------------


def after_files(progress: Progress | None, files: int) -> Progress | None:
    """The embedding phase's progress after an ingest's `files`: one count going up over both phases (MCP progress
    only increases), the message saying text search is ready."""
    if progress is None:
        return None

    def report(done: int, total: int, message: str) -> None:
        progress(files + done, files + total, f"all {files} files searchable by text; embedding: {message}")

    return report


class _Closing(Exception):
    """The brain is closing: an ingest resumed in the background stops between two files."""


def _inside(path: str, root: str) -> bool:
    if path == root:
        return True
    prefix = root if root.endswith(os.sep) else root + os.sep
    return path.startswith(prefix)


def _rel(path: str, root: str) -> str:
    return "" if path == root else os.path.relpath(path, root).replace(os.sep, "/")


def _clean_rel(file_path: str) -> str:
    text = file_path.strip().replace("\\", "/")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if not parts or ".." in parts or text.startswith("/") or "\x00" in text or len(text) > 300:
        raise invalid_input(
            "file_path must be a relative path such as 'src/auth.py' (no '..', not absolute, ≤ 300 characters)."
        )
    return "/".join(parts)


def _candidates(nodes: Sequence[Node]) -> str:
    """`[label] name at path:line (project) id=…` for each node, the way a caller picks one."""
    return "; ".join(
        f"[{n.label}] {n.name} at {n.path or '-'}{f':{n.start_line}' if n.start_line else ''} "
        f"({n.project_id}) id={n.id}"
        for n in nodes
    )


def _read(path: str, limit: int) -> bytes | None:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            return handle.read(limit + 1)[:limit]
    except OSError:
        return None


def _single_entry(path: str, rel: str, info: os.stat_result) -> Any:
    from mcp_sections.shared.brain.parsing import WalkEntry

    return WalkEntry(path, rel, info.st_size, info.st_mtime_ns)


def project_summary(project: Project, brain: Brain) -> dict[str, Any]:
    data = project.to_dict()
    data["loaded"] = project.id in brain.loaded
    data["active"] = project.id == brain.active
    with contextlib.suppress(Exception):
        searchable = brain.searchable(project.id)
        data["embeddings_pending"] = searchable.pending if brain.model_key else None
        data["searchable"] = searchable.as_dict()
    return data


__all__ = ["Brain", "IngestReport", "SearchScope", "Searchable", "project_summary", "valid_project_id"]
