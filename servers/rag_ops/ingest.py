"""Ingest: where a path belongs (`resolve_context`), a tree's files parsed into the graph incrementally
(`ingest_tree`), inline code and fetched pages.

Context resolution, for a path inside the configured roots:
- inside (or equal to) a registered project's root → that project, incrementally (a sub-path only
  touches that sub-tree); equal to the root → `already-ingested` (refresh);
- otherwise a quick-ingest project with a generated namespace (`<dirname>-<hash6>`, auto-cleanup);
- registered projects whose root lies inside the ingested tree are excluded from it.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp_sections.servers.rag_ops.paths import clean_rel, read_head, relative
from mcp_sections.servers.rag_ops.projects import ProjectRegistry
from mcp_sections.shared.brain.embedding_jobs import Progress
from mcp_sections.shared.brain.model import Project, slugify
from mcp_sections.shared.brain.web_pages import INLINE_MTIME, store_web_page
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure, invalid_input, permission_denied
from mcp_sections.shared.ground.locations import is_inside

FLUSH_FILES = 40
FLUSH_SECONDS = 0.5
PROGRESS_SECONDS = 0.2
SNIPPETS_PROJECT = "snippets"


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


@dataclass
class ProjectSetup:
    project: Project
    created: bool
    report: IngestReport
    embeddings: dict[str, Any] | None = None
    embeddings_note: str | None = None


class BrainIngest(ProjectRegistry):
    """Ingesting into the brain (the ingesting half of `Brain`)."""

    def resolve_context(self, path: str, project_name: str | None = None) -> tuple[Project, str, str]:
        """(project, relative start path, context) for an ingest of `path`."""
        target = self.resolve_path(path)
        target_text = str(target)
        if project_name is not None:
            pid = slugify(project_name)
            existing = self.store.get_project(pid)
            if existing is not None:
                if existing.type != "web-crawl" and is_inside(target_text, existing.root):
                    return existing, relative(target_text, existing.root), "named-project"
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
            return owner, relative(target_text, owner.root), "subdir-of-project"
        if not target.is_dir():
            raise invalid_input(
                f"{path!r} is a file outside every registered project; ingest its directory, or pass the content "
                "to ingest_code."
            )
        digest = hashlib.sha1(target_text.encode("utf-8", "surrogatepass")).hexdigest()[:6]
        pid = f"{slugify(target.name or 'root', 40)}-{digest}"
        project = Project(
            id=pid,
            name=self.manifest_name(target_text) or target.name or target_text,
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
        project, created = self.create_project(name or self.default_name(target), str(target))
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
        self._manifest_names.pop(project.root, None)  # read again: a manifest may have changed within its stat
        with self._ingest_lock:
            self.store.update_project(project.id, status="ingesting", last_accessed=time.time())
            stats = parsing.WalkStats()
            report.excluded_projects = self._excluded_children(project)
            records = self.store.file_records(project.id, start_rel)
            entries = self._entries(project, start_rel, report, stats)
            report.files_scanned = len(entries)
            _TreeIngest(self.store, project, report, records, stats, self.max_file_bytes, progress).run(entries)
        if self.model_key:
            report.embeddings_pending = self.store.count_pending(self.model_key, [project.id])
        self.wake()
        report.seconds = round(time.perf_counter() - started, 3)
        return report

    def _entries(self, project: Project, start_rel: str, report: IngestReport, stats: Any) -> list[Any]:
        """The files an ingest of `project` from `start_rel` reads (one, when it names a file); MAX_LIMIT_EXCEEDED
        past `max_files`."""
        from mcp_sections.shared.brain import parsing  # walking and parsers: only ingest and staleness need them

        excluded = [relative(os.path.join(project.root, e), project.root) for e in report.excluded_projects]
        start_abs = os.path.join(project.root, start_rel) if start_rel else project.root
        if os.path.isfile(start_abs):
            info = os.stat(start_abs)
            return [_single_entry(start_abs, start_rel, info)]
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
        return entries

    def ingest_code(
        self, content: str, file_path: str, project_id: str | None = None, language: str | None = None
    ) -> tuple[Project, Any]:
        from mcp_sections.shared.brain import parsing  # walking and parsers: only ingest and staleness need them

        rel = clean_rel(file_path)
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


class _TreeIngest:
    """One ingest of a tree's files into a project (under the brain's ingest lock): new and changed files parsed and
    written in batches, unchanged ones kept (by size and time, else by content hash), vanished ones removed. Cut
    short, it keeps what it wrote and leaves the project `interrupted`."""

    def __init__(
        self,
        store: Any,
        project: Project,
        report: IngestReport,
        records: dict[str, Any],
        stats: Any,
        max_file_bytes: int,
        progress: Progress | None,
    ) -> None:
        self.store = store
        self.project = project
        self.report = report
        self.records = records  # what the store holds of the tree; what is left at the end is removed
        self.stats = stats
        self.max_file_bytes = max_file_bytes
        self.progress = progress
        self.batch: list[Any] = []
        self.touched: list[tuple[str, int, int]] = []  # unchanged content, new size or time
        self.last_flush = self.last_progress = time.monotonic()

    def run(self, entries: Sequence[Any]) -> None:
        total = len(entries)
        try:
            if self.progress is not None:
                self.progress(0, total, f"scanning {total} files of {self.project.id}")
            for done, entry in enumerate(entries, start=1):
                self.take(entry)
                self.pace(done, total)
            self.flush()
        except BaseException:  # cancelled (the progress callback raised) or failed: keep what was parsed, and
            self.flush()  # the next ingest goes on from there (the next start resumes an interrupted one)
            self.store.refresh_counts(self.project.id)
            self.store.update_project(self.project.id, status="interrupted")
            raise
        self.finish()

    def take(self, entry: Any) -> None:
        """One file: skipped if unchanged, parsed into the batch if new or changed."""
        from mcp_sections.shared.brain import parsing  # walking and parsers: only ingest and staleness need them

        record = self.records.pop(entry.rel, None)
        current = record is not None and parsing.parsed_now(record.hash)
        if current and record.size == entry.size and record.mtime_ns == entry.mtime_ns:
            self.report.files_unchanged += 1
            return
        data = read_head(entry.path, self.max_file_bytes)
        binary = data is not None and parsing.looks_binary(data)
        if data is None or binary or parsing.holds_private_key(data):
            self.stats.skipped_binary += binary
            self.stats.skipped_secret += data is not None and not binary
            if record is not None:
                self.records[entry.rel] = record  # it is no longer ingestible: removed below
            return
        if current and record.hash == parsing.file_digest(data):
            self.report.files_unchanged += 1
            self.touched.append((entry.rel, entry.size, entry.mtime_ns))
            return
        self.batch.append(parsing.parse_file(self.project.id, entry.rel, data, entry.mtime_ns))
        (self.report.files_changed if record is not None else self.report.files_added).append(entry.rel)

    def pace(self, done: int, total: int) -> None:
        """Write the batch when it is full or old enough; report progress now and then, and at the last file."""
        now = time.monotonic()
        if len(self.batch) >= FLUSH_FILES or (self.batch and now - self.last_flush > FLUSH_SECONDS):
            self.flush()
        if self.progress is not None and (now - self.last_progress > PROGRESS_SECONDS or done == total):
            self.last_progress = now
            new = len(self.report.files_added) + len(self.report.files_changed)
            self.progress(done, total, f"{done}/{total} files ({new} new or changed)")

    def flush(self) -> None:
        if self.batch:
            self.store.replace_files(self.project.id, self.batch)
            self.report.nodes_written += sum(len(p.nodes) for p in self.batch)
            self.batch = []
        self.last_flush = time.monotonic()

    def finish(self) -> None:
        """Record the unchanged files' new stats, remove the vanished files, relink if needed, and mark it ready."""
        pid = self.project.id
        if self.touched:
            self.store.update_file_stats(pid, self.touched)
        removed = [rel for rel, rec in self.records.items() if rec.mtime_ns != INLINE_MTIME]
        if removed:
            self.store.remove_paths(pid, removed)
            self.report.files_removed = sorted(removed)
        current = self.store.get_project(pid)
        if current is not None and current.needs_relink:
            self.store.relink(pid)
        self.report.node_count = self.store.refresh_counts(pid)
        now_wall = time.time()
        self.store.update_project(pid, status="ready", last_ingest=now_wall, last_accessed=now_wall)
        self.report.skipped = self.stats.as_dict()


def after_files(progress: Progress | None, files: int) -> Progress | None:
    """The embedding phase's progress after an ingest's `files`: one count going up over both phases (MCP progress
    only increases), the message saying text search is ready."""
    if progress is None:
        return None

    def report(done: int, total: int, message: str) -> None:
        progress(files + done, files + total, f"all {files} files searchable by text; embedding: {message}")

    return report


def _single_entry(path: str, rel: str, info: os.stat_result) -> Any:
    from mcp_sections.shared.brain.parsing import WalkEntry

    return WalkEntry(path, rel, info.st_size, info.st_mtime_ns)
