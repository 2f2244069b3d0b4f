"""Forgetting: a path, a directory or a crawled URL leaves the brain (`forget_path`), and expired or rootless
projects are collected (`gc`)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from mcp_sections.servers.rag_ops.paths import relative
from mcp_sections.servers.rag_ops.projects import ProjectRegistry
from mcp_sections.shared.ground.errors import invalid_input, permission_denied
from mcp_sections.shared.ground.locations import is_inside


class BrainForgetting(ProjectRegistry):
    """What leaves the brain (the forgetting half of `Brain`)."""

    def forget_path(self, path: str) -> dict[str, Any]:
        text = path.strip()
        if not text or text in (".", "/", "~", "*", "**"):
            raise invalid_input("refusing to forget an empty or root-matching pattern; give one file or directory.")
        is_url = text.startswith(("http://", "https://"))
        if any(ch in text for ch in "*?[") and not is_url:
            raise invalid_input("forget_path takes a literal path, not a glob pattern.")
        forgotten = _Forgotten()
        if is_url:
            self._forget_url(text, forgotten)
        else:
            self._forget_local(path, text, forgotten)
        for pid in forgotten.affected:
            self.store.relink(pid)
            self.store.refresh_counts(pid)
        return {
            "removed_nodes": forgotten.removed_nodes,
            "projects_changed": forgotten.affected,
            "projects_deleted": forgotten.deleted,
        }

    def _forget_url(self, url: str, forgotten: _Forgotten) -> None:
        """A crawl's root URL deletes the crawl; any other URL leaves every crawl holding it."""
        for project in self.store.list_projects():
            if project.type != "web-crawl":
                continue
            if project.root.rstrip("/") == url.rstrip("/"):
                forgotten.deleted_project(project.id, self.store.delete_project(project.id))
            else:
                forgotten.changed(project.id, self.store.remove_paths(project.id, [url]))

    def _forget_local(self, path: str, text: str, forgotten: _Forgotten) -> None:
        """Projects inside the path are deleted; the path leaves the project holding it (never a whole root)."""
        target = str(self.resolve_path(text, must_exist=False))
        if any(is_inside(str(root), target) for root in self.roots):
            raise permission_denied(
                f"{path!r} is (or contains) an allowed root; forgetting it would erase the whole brain. "
                "Give a project, directory or file inside a root."
            )
        for project in self._dir_projects():
            if is_inside(project.root, target):
                forgotten.deleted_project(project.id, self.store.delete_project(project.id))
                self.loaded.discard(project.id)
                if self.active == project.id:
                    self.active = None
            elif is_inside(target, project.root):
                rel = relative(target, project.root)
                forgotten.changed(project.id, self.store.remove_paths(project.id, [rel], prefixes=[rel]))

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


@dataclass
class _Forgotten:
    """What a forget_path removed: nodes, the projects that lost some, the projects deleted."""

    removed_nodes: int = 0
    affected: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def deleted_project(self, project_id: str, nodes: int) -> None:
        self.removed_nodes += nodes
        self.deleted.append(project_id)

    def changed(self, project_id: str, nodes: int) -> None:
        if nodes:
            self.removed_nodes += nodes
            self.affected.append(project_id)
