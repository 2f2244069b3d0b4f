"""The section's settings and state: the configured roots, and the roots in force for a client.

Client roots policy (MCP `roots/list`):
- the server's configured roots (`--root`, `MCP_SECTIONS_ROOTS`, the config file) are the outer limit;
- when the client offers roots and roots are configured, the roots in force are the *intersection*:
  client roots that lie inside a configured root, and configured roots that lie inside a client root
  (a client can narrow access, never widen it); if the two sets do not overlap, nothing is allowed and
  every call says so;
- when no roots are configured, the client's roots are used as they are;
- when the client offers no roots, the configured roots are used;
- `use_client_roots = false` ignores client roots entirely.
The client's roots are fetched per connection and re-read after `notifications/roots/list_changed`
(the cache lives in `shared.serving.server`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_sections.servers.file_ops.settings import FileOpsSettings
from mcp_sections.shared.confinement.guards.paths import PathGuard, intersect_roots, roots_from_uris
from mcp_sections.shared.confinement.sandbox import Sandbox, detect
from mcp_sections.shared.ground.errors import ConfigError, ErrorCode, ToolFailure
from mcp_sections.shared.settings.config import refuse_sandbox_off_inside

if TYPE_CHECKING:
    from .journal import Journal


class FileOpsState:
    """The configured guard plus a small cache of guards built for client roots."""

    def __init__(
        self,
        configured_roots: list[Path],
        settings: FileOpsSettings,
        private: Sequence[Path] = (),
        data_dir: Path | None = None,
        config: tuple[Path | None, dict[str, Any]] = (None, {}),
    ) -> None:
        """`private`: the suite's own state (data, cache, config), outside the roots even when they contain it;
        `data_dir`: where the undo journal lives (None: no journal); `config`: the config file and its sections'
        tables, checked against the roots a client offers as against the CLI roots at start."""
        self.settings = settings
        self._config = config
        self._data_dir = data_dir
        self._journal: Journal | None = None
        self.configured = PathGuard(
            configured_roots,
            settings.all_deny_globs(),
            allow_hard_links=settings.allow_hard_links,
            private=private,
            roots_tool="list_allowed_roots",
        )
        self._lock = threading.Lock()
        self._by_client: dict[tuple[str, ...], tuple[PathGuard, str]] = {}
        self._sandbox: Sandbox | None = None

    @property
    def journal(self) -> Journal | None:
        """The undo journal (opened on first use), or None when undo is off."""
        if self._data_dir is None or not self.settings.undo_enabled:
            return None
        with self._lock:
            if self._journal is None:
                import sqlite3  # SQLite is imported and opened with the first change, not at start-up

                from .journal import Journal, Limits

                settings = self.settings
                limits = Limits(
                    max_file_bytes=settings.undo_max_file_bytes,
                    max_total_bytes=settings.undo_max_total_bytes,
                    max_entries=settings.undo_max_entries,
                    max_changes=settings.undo_max_changes,
                    max_age_days=settings.undo_max_age_days,
                )
                try:
                    self._journal = Journal(self._data_dir, limits)
                except (OSError, sqlite3.Error, ToolFailure) as exc:
                    reason = exc.message if isinstance(exc, ToolFailure) else f"{type(exc).__name__}: {exc}"
                    raise ToolFailure(
                        ErrorCode.DATABASE_ERROR,
                        f"the undo journal in {self._data_dir} cannot be opened ({reason}), so no change is made "
                        "without a way back; fix the data directory (--data-dir), or set [sections.file_ops] "
                        "undo_enabled = false to change files without undo.",
                    ) from None
            return self._journal

    def sandbox(self) -> Sandbox:
        """The sandbox installers run in (detected on first use; DEPENDENCY_ERROR when none can run)."""
        if self._sandbox is None:
            self._sandbox = detect(self.settings.sandbox, "file_ops")
        return self._sandbox

    def guard_for(self, client_uris: list[str] | None) -> tuple[PathGuard, str]:
        """The guard in force and where its roots come from: configured, client or intersection."""
        if client_uris is None or not self.settings.use_client_roots:
            return self.configured, "configured"
        key = tuple(client_uris)
        with self._lock:
            cached = self._by_client.get(key)
        if cached is not None:
            return cached
        client = roots_from_uris(client_uris)
        try:
            refuse_sandbox_off_inside(self._config[0], self._config[1], client)
        except ConfigError as exc:
            raise ToolFailure(ErrorCode.PERMISSION_DENIED, str(exc)) from None
        configured = list(self.configured.roots)
        if not client:
            built = (self.configured, "configured")
        elif not configured:
            built = (self.configured.with_roots(client), "client")
        else:
            roots = intersect_roots(configured, client)
            message = (
                "the client's roots ("
                + ", ".join(str(path) for path in client)
                + ") do not overlap the server's allowed roots ("
                + ", ".join(str(path) for path in configured)
                + "), so no path is allowed; open a workspace inside the allowed roots or restart the server "
                "with a matching --root."
            )
            built = (self.configured.with_roots(roots, no_roots_message=message), "intersection")
        with self._lock:
            if len(self._by_client) > 32:
                self._by_client.clear()
            self._by_client[key] = built
        return built

    def close(self) -> None:
        with self._lock:
            self._by_client.clear()
            if self._journal is not None:
                self._journal.close()
                self._journal = None
