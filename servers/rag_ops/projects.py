"""The brain's projects: the registry (create, load, switch, unload), the paths they own, what a search covers, and
staleness."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_sections.servers.rag_ops.paths import read_head, relative
from mcp_sections.servers.rag_ops.search import BrainSearch
from mcp_sections.shared.brain.model import Project, slugify
from mcp_sections.shared.brain.web_pages import INLINE_MTIME
from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.ground.errors import invalid_input, not_found
from mcp_sections.shared.ground.locations import is_inside
from mcp_sections.shared.text import manifests

Stamps = tuple[tuple[str, int, int, int], ...]  # a directory's manifests: (file, inode, mtime, size) of each one
LISTED = 8  # project ids a scope's sentence names before "… (N in all)"


@dataclass(frozen=True)
class SearchScope:
    """What a search covers: `project_ids` (None: every project), and `note`, the sentence that says which projects,
    why those, and the argument that widens or narrows the search."""

    project_ids: list[str] | None
    note: str


class ProjectRegistry(BrainSearch):
    """The projects of a brain and the paths they own (the registry half of `Brain`, which sets these attributes)."""

    roots: list[Path]
    max_file_bytes: int
    max_files: int
    retention_days: float
    active: str | None
    loaded: set[str]
    _guard: PathGuard
    _ingest_lock: threading.Lock
    _manifest_names: dict[str, tuple[Stamps, str | None]]  # root → (its manifests when read, the name they declare)

    # ---- paths ----------------------------------------------------------------------------------
    def resolve_path(self, path: str, *, must_exist: bool = True) -> Path:
        return self._guard.resolve(path, purpose="read" if must_exist else "create")

    # ---- projects -------------------------------------------------------------------------------
    def project(self, reference: str) -> Project:
        """The project `reference` names: its id; else, when one project has it, its name or the name its manifest
        declares (pyproject.toml, package.json, ...: what get_project_info reports), as typed or as a slug."""
        project = self.store.get_project(reference)
        if project is not None:
            return project
        projects = self.store.list_projects()
        named = {p.id: p for p in projects if reference in (p.name, slugify(p.name))}
        for p in self._dir_projects():
            declared = self.manifest_name(p.root)
            if declared is not None and reference in (declared, slugify(declared)):
                named[p.id] = p
        if len(named) == 1:
            return next(iter(named.values()))
        if named:
            raise invalid_input(
                f"{len(named)} projects are named {reference!r}: {_listing(named.values())}; pass one of these ids."
            )
        holders = [f"{owner.id} holds the root {root}" for root in self.roots if (owner := self.owner_of(str(root)))]
        raise not_found(
            f"no project has the id, the name or the manifest name {reference!r}; known projects: "
            f"{_listing(projects[:20]) or 'none yet'}{'; …' if len(projects) > 20 else ''}"
            f"{' (' + '; '.join(holders) + ')' if holders else ''}. Pass a project id from list_projects."
        )

    def manifest_name(self, root: str) -> str | None:
        """The name the manifests at `root` declare (`shared.text.manifests`), read inside the roots only: once, and
        again when one of them changed (as its stat shows) or the project at `root` is ingested again."""
        if not os.path.isabs(root) or not os.path.isdir(root):
            return None
        stamps = _manifest_stamps(root)
        known = self._manifest_names.get(root)
        if known is not None and known[0] == stamps:
            return known[1]
        name = manifests.declared(Path(root), self._guard.allows).name
        self._manifest_names[root] = (stamps, name)
        return name

    def default_name(self, target: Path) -> str:
        """The name a directory's project gets when the caller gives none: the one it already has; else the name its
        manifest declares, unless another project has that id; else the directory's name."""
        root = str(target)
        existing = next((p for p in self._dir_projects() if p.root == root), None)
        if existing is not None:
            return existing.name
        declared = self.manifest_name(root)
        if declared and self.store.get_project(slugify(declared)) is None:
            return declared
        return target.name or root

    def scope_of_search(
        self,
        requested: Sequence[str] | None,
        *,
        all_projects: bool = False,
        roots: Sequence[str] | None = None,
        project_types: Sequence[str] | None = None,
        argument: str = "projects",
    ) -> SearchScope:
        """What a search covers, and why (`SearchScope.note`): every project with `all_projects` (`requested` then
        ignored); else the projects `requested`; else the project the caller works in: the active one (switch_project,
        setup_project, load_project), else the deepest project holding one of the caller's `roots` (its MCP roots;
        None: the server's), else the projects inside those roots; else every project. `project_types` then keeps the
        projects of those types. `argument` is the tool's argument that names projects (`project`: one, `projects`: a
        list), the one the note's hints spell."""
        projects = sorted(self.store.list_projects(), key=lambda p: p.id)
        if not projects:
            return SearchScope(None, EMPTY_BRAIN)
        ids, why = self._chosen(requested, all_projects, roots, argument)
        if project_types:
            kept = {p.id for p in projects if p.type in project_types}
            ids = [pid for pid in (ids if ids is not None else [p.id for p in projects]) if pid in kept]
            why += f", of the types {', '.join(project_types)} (project_types)"
        searched = ids if ids is not None else [p.id for p in projects]
        note = f"Searched {_ids(searched)}: {why}. {_hint(ids, projects, argument, bool(project_types))}"
        return SearchScope(ids, note)

    def _chosen(
        self, requested: Sequence[str] | None, all_projects: bool, roots: Sequence[str] | None, argument: str
    ) -> tuple[list[str] | None, str]:
        """The projects a search covers before `project_types` (None: all), and why."""
        if all_projects:
            ignored = f" ({argument} ignored)" if requested else ""
            return None, f"every project, as all_projects=true asks{ignored}"
        if requested:
            ids = list(dict.fromkeys(self.project(reference).id for reference in requested))
            asked = f"'{requested[0]}'" if argument == "project" else str(list(requested))
            return ids, f"as {argument}={asked} asks"
        if self.active is not None and self.store.get_project(self.active) is not None:
            return [self.active], "the active project (made so by switch_project, setup_project or load_project)"
        whose = "your root" if roots is not None else "the server's root"
        places = [os.path.realpath(r) for r in (roots if roots is not None else [str(r) for r in self.roots])]
        holders = {place: owner for place in places if (owner := self.owner_of(place)) is not None}
        if holders:
            ids = list(dict.fromkeys(p.id for p in holders.values()))
            held = ", ".join(f"{owner.id} holds {place}" for place, owner in holders.items())
            return ids, f"the project you work in ({held}, {whose})"
        under = sorted(p.id for p in self._dir_projects() if any(is_inside(p.root, place) for place in places))
        where = ", ".join(places)
        if under:
            return under, f"the projects inside {whose} {where}"
        return None, f"every project, as none holds {whose} {where} nor lies inside it"

    def _dir_projects(self) -> list[Project]:
        return [p for p in self.store.list_projects() if p.type != "web-crawl" and os.path.isabs(p.root)]

    def owner_of(self, target: str) -> Project | None:
        """The deepest registered directory project containing `target`."""
        owners = [p for p in self._dir_projects() if is_inside(target, p.root)]
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
            if parent.id != project.id and is_inside(project.root, parent.root) and parent.root != project.root:
                rel = relative(project.root, parent.root)
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
        """How many files changed on disk since the last ingest, or were parsed by an older version of the parsers
        (None for non-directory projects)."""
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
                data = read_head(entry.path, self.max_file_bytes)
                stale += data is not None and not parsing.looks_binary(data) and not parsing.holds_private_key(data)
            elif record.size != entry.size or record.mtime_ns != entry.mtime_ns or not parsing.parsed_now(record.hash):
                stale += 1  # changed, or parsed by an older version of the parsers
            if seen > self.max_files:
                break
        return stale + len(records)

    def _excluded_children(self, project: Project) -> list[str]:
        return [
            relative(other.root, project.root)
            for other in self._dir_projects()
            if other.id != project.id and other.root != project.root and is_inside(other.root, project.root)
        ]


def _manifest_stamps(root: str) -> Stamps:
    """The manifests at `root` as they are now (those present)."""
    stamps = []
    for name in manifests.MANIFEST_FILES:
        try:
            info = os.stat(os.path.join(root, name))
        except OSError:
            continue
        stamps.append((name, info.st_ino, info.st_mtime_ns, info.st_size))
    return tuple(stamps)


EMPTY_BRAIN = (
    "Searched nothing: the brain holds no project yet. setup_project (or ingest_directory) ingests a directory, "
    "ingest_code a snippet; a search then answers from the project you work in."
)


def _ids(ids: Sequence[str]) -> str:
    """`alpha, beta` or `alpha, beta, … (12 projects in all)`; `no project` when empty."""
    if not ids:
        return "no project"
    shown = ", ".join(ids[:LISTED])
    return shown if len(ids) <= LISTED else f"{shown}, … ({len(ids)} projects in all)"


def _hint(ids: list[str] | None, projects: Sequence[Project], argument: str, typed: bool) -> str:
    """How to widen (all_projects=true, or without project_types when `typed`) or narrow (the tool's `argument`) a
    search that covered `ids` (None: every project)."""
    if typed and not ids:
        return "Drop project_types to search the projects of every type."
    if len(projects) == 1:
        return "It is the brain's only project: all_projects=true searches the same."
    others = [p.id for p in projects if ids is None or p.id not in ids]
    if ids is None or not others:
        mine = (ids or [p.id for p in projects])[0]
        return f"Narrow it with {_naming(argument, mine)}."
    return (
        f"Widen it with all_projects=true (all {len(projects)} projects), or search another with "
        f"{_naming(argument, others[0])}."
    )


def _naming(argument: str, project_id: str) -> str:
    """The argument that names `project_id`, as the tool spells it: project='x' or projects=['x']."""
    return f"{argument}='{project_id}'" if argument == "project" else f"{argument}=['{project_id}']"


def _listing(projects: Iterable[Project]) -> str:
    return ", ".join(f"{p.id} ({p.root})" for p in projects)
