"""The settings of file_ops: `[sections.file_ops]` in the config file, `MCP_SECTIONS_FILE_OPS_*` in the environment."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator

from mcp_sections.shared.confinement.guards.paths import DEFAULT_DENY_GLOBS
from mcp_sections.shared.confinement.installers import DEFAULT_REGISTRIES
from mcp_sections.shared.settings.config import SectionSettings, split_commas


class FileOpsSettings(SectionSettings):
    """Settings of the file_ops section (`[sections.file_ops]` or `MCP_SECTIONS_FILE_OPS_*`)."""

    env_prefix: ClassVar[str] = "MCP_SECTIONS_FILE_OPS_"

    deny_globs: list[str] = Field(
        default_factory=lambda: list(DEFAULT_DENY_GLOBS),
        description="Glob patterns (per path component) that no tool may read, write, list into or delete.",
    )
    extra_deny_globs: list[str] = Field(
        default_factory=list, description="Patterns added to `deny_globs` (keeps the defaults)."
    )
    allow_hard_links: bool = Field(
        default=False,
        description="Read regular files that have more than one name (off: refused, since the other name may be a "
        "secret or lie outside the roots). Hard-linked files are never written in place either way.",
    )
    use_client_roots: bool = Field(default=True, description="Narrow the roots to the client's MCP roots.")
    max_read_bytes: int = Field(default=4 * 1024 * 1024, ge=1024, description="Most text bytes one read returns.")
    max_image_bytes: int = Field(default=5 * 1024 * 1024, ge=1024, description="Largest image read_file returns.")
    max_write_bytes: int = Field(default=16 * 1024 * 1024, ge=1024, description="Largest content write_file accepts.")
    max_edit_file_bytes: int = Field(default=8 * 1024 * 1024, ge=1024, description="Largest file edit_file edits.")
    max_search_file_bytes: int = Field(
        default=4 * 1024 * 1024, ge=1024, description="Files larger than this are skipped by search_files."
    )
    search_timeout_seconds: float = Field(default=20.0, gt=0, le=600, description="Time budget of one search.")
    search_engine: Literal["auto", "python"] = Field(
        default="auto",
        description="auto: search_files lets ripgrep (`rg` on the fixed search path) pick the files to search "
        "when it can do so exactly, same results; python: always the Python walk.",
    )
    walk_max_entries: int = Field(
        default=500_000, ge=1000, description="Most directory entries one glob/search/tree walk visits."
    )
    install_timeout_seconds: float = Field(default=300.0, gt=0, le=3600, description="Time limit of one install.")
    npm_ignore_scripts: bool = Field(
        default=True, description="Pass --ignore-scripts to npm (no install scripts run on the machine)."
    )
    sandbox: Literal["auto", "bubblewrap", "seatbelt", "off"] = Field(
        default="auto",
        description="Confinement of install_package by the OS (shared/confinement/sandbox.py): the installer sees "
        "the system directories read-only, the project (writable) and the network, nothing else; auto (bubblewrap on "
        "Linux, Seatbelt on macOS) refuses to install without a working sandbox; off installs unconfined and says so "
        "in the result.",
    )
    install_registries: list[str] = Field(
        default_factory=lambda: list(DEFAULT_REGISTRIES),
        description="The only places install_package's installer may reach (through an egress proxy: no other address, "
        "loopback included): registry URLs (`https://pypi.org/simple`) or hosts (`*.example.org`). The server's own "
        "PIP_INDEX_URL, PIP_EXTRA_INDEX_URL and npm_config_registry are added. An `http://` URL opens that host and "
        "port over plain HTTP; a private or loopback registry is reached only when listed here.",
        max_length=100,
    )
    pip_allow_server_environment: bool = Field(
        default=False,
        description="When the project has no virtual environment, install into the server's own environment "
        "(off by default: a model-driven install must not change the server's interpreter).",
    )
    undo_enabled: bool = Field(
        default=True,
        description="Record every change (write, edit, move, copy, delete, create directory) with what was there "
        "before in <data_dir>/file_changes.sqlite3, for list_file_changes and undo_file_change.",
    )
    undo_max_file_bytes: int = Field(
        default=10 * 1024 * 1024, ge=1024, description="Largest file content the undo journal keeps."
    )
    undo_max_total_bytes: int = Field(
        default=200 * 1024 * 1024,
        ge=1024 * 1024,
        description="Distinct contents the undo journal keeps in all (the oldest changes are dropped first); one "
        "change that needs more is refused unless the call passes undoable=false.",
    )
    undo_max_entries: int = Field(
        default=10_000, ge=10, le=1_000_000, description="Most entries of a directory tree one change keeps."
    )
    undo_max_changes: int = Field(default=1000, ge=1, le=1_000_000, description="Changes the undo journal keeps.")
    undo_max_age_days: float = Field(default=30.0, gt=0, le=3650, description="Changes older than this are dropped.")

    _split_globs = field_validator("deny_globs", "extra_deny_globs", "install_registries", mode="before")(split_commas)

    def all_deny_globs(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*self.deny_globs, *self.extra_deny_globs]))
