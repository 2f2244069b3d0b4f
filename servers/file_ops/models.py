"""Inputs and outputs of the file_ops tools."""

from __future__ import annotations

import base64
import functools
from typing import Annotated, Any, Literal

from mcp_types import ImageContent
from pydantic import Field, PrivateAttr, model_serializer, model_validator

from mcp_sections.shared.framework.tools import ToolInput, ToolResult

PATH_DESCRIPTION = (
    "File or directory path: absolute, or relative to the first allowed root (never to the server's working "
    "directory). Must lie inside the allowed roots (see list_allowed_roots)."
)
MAX_PATH_CHARS = 4096  # PATH_MAX; the path guard refuses longer paths anyway
MAX_GLOB_CHARS = 1000  # as `pattern` of glob_files: no real glob comes near it
PathText = Annotated[str, Field(max_length=MAX_PATH_CHARS)]
Glob = Annotated[str, Field(max_length=MAX_GLOB_CHARS)]
GLOB_LIST: Any = Field(
    default_factory=list,
    max_length=50,
    description="Glob patterns; a pattern without '/' matches entry names (e.g. 'node_modules', '*.min.js'), "
    "one with '/' matches paths relative to `path` (e.g. 'build/**').",
)


class CompactItem(ToolResult):
    """An item of a long list: optional fields still empty (None, False, []) are left out of the structured
    output, which keeps 10,000-entry results a third smaller (and quicker for clients to validate)."""

    @model_serializer(mode="wrap")
    def _compact(self, handler: Any):  # no return annotation: the JSON schema stays the fields' own
        required = _required_fields(type(self))
        return {
            key: value
            for key, value in handler(self).items()
            if key in required or not (value is None or value is False or value == [])
        }


@functools.cache
def _required_fields(model: type[ToolResult]) -> frozenset[str]:
    return frozenset(name for name, field in model.__pydantic_fields__.items() if field.is_required())


def _undoable_field() -> Any:
    return Field(
        default=True,
        description="Keep what this call replaces in the undo journal (undo_file_change). A change too large for "
        "the journal's limits is refused unless undoable=false, which makes it without a way back.",
    )


CHANGE_ID: Any = Field(
    default=None,
    description="Id of this change in the undo journal (undo_file_change undoes it); null when nothing changed, "
    "undo is off or undoable=false.",
)


CURSOR: Any = Field(
    default=None, max_length=200, description="`next_cursor` of the previous page, to continue the listing."
)
NEXT_CURSOR: Any = Field(default=None, description="Pass as `cursor` for the next page; absent at the end.")


def _path_field(description: str = PATH_DESCRIPTION, default: str | None = None) -> Any:
    if default is None:
        return Field(description=description, min_length=1, max_length=MAX_PATH_CHARS)
    return Field(default=default, description=description, min_length=1, max_length=MAX_PATH_CHARS)


# -- read_file -------------------------------------------------------------------------------------------


class ReadFileInput(ToolInput):
    path: str = _path_field()
    offset: int | None = Field(
        default=None, ge=1, le=100_000_000, description="1-based line number to start at (use with `limit`)."
    )
    limit: int | None = Field(default=None, ge=1, le=1_000_000, description="Number of lines to return from `offset`.")
    head: int | None = Field(default=None, ge=1, le=1_000_000, description="Return only the first N lines.")
    tail: int | None = Field(default=None, ge=1, le=1_000_000, description="Return only the last N lines.")
    encoding: Literal["auto", "utf-8", "utf-16", "latin-1"] = Field(
        default="auto",
        description="Text encoding; 'auto' detects UTF-8, UTF-16/32 (BOM) and falls back to Latin-1, "
        "and refuses binary files.",
    )

    @model_validator(mode="after")
    def _one_window(self) -> ReadFileInput:
        chosen = [name for name in ("head", "tail") if getattr(self, name) is not None]
        if self.offset is not None or self.limit is not None:
            chosen.append("offset/limit")
        if len(chosen) > 1:
            raise ValueError(f"use only one of head, tail, offset/limit (got {', '.join(chosen)})")
        return self


class ReadFileResult(ToolResult):
    path: str = Field(description="Real path of the file read.")
    size_bytes: int
    mime_type: str | None = None
    encoding: str | None = Field(default=None, description="Encoding used to decode the text (None for images).")
    content: str | None = Field(default=None, description="The text read (None for images: see the image content).")
    start_line: int | None = Field(default=None, description="First line returned (1-based), when known.")
    end_line: int | None = Field(default=None, description="Last line returned, when known.")
    total_lines: int | None = Field(default=None, description="Lines in the file, when the whole file was read.")
    truncated: bool = Field(
        default=False,
        description="The content stops early: the read cap was reached (or, for a whole-file read, not all lines "
        "fit), or it was longer than the inline limit; read the rest with offset/limit (or `content_uri`).",
    )
    content_uri: str | None = Field(
        default=None,
        description="The whole text read, by reference (resources/read), when `content` is only its start "
        "(texts longer than 16,000 characters).",
    )
    _image_data: str | None = PrivateAttr(default=None)

    def with_image(self, data: bytes) -> ReadFileResult:
        self._image_data = base64.b64encode(data).decode("ascii")
        return self

    def render_text(self) -> str:
        if self._image_data is not None:
            return f"{self.path}: image ({self.mime_type}, {self.size_bytes} bytes)"
        content = self.content or ""
        if self.truncated:
            where = f"lines {self.start_line}-{self.end_line}" if self.start_line else "part"
            total = f" of {self.total_lines}" if self.total_lines else ""
            content += f"\n[truncated: showing {where}{total}; use offset/limit, head or tail for more]"
        if self.content_uri:
            content += f"\n[the whole text read: {self.content_uri}]"
        return content

    def extra_content(self) -> list[Any]:
        if self._image_data is None:
            return []
        return [ImageContent(type="image", data=self._image_data, mime_type=self.mime_type or "image/png")]


class ReadMultipleInput(ToolInput):
    paths: list[PathText] = Field(
        min_length=1, max_length=50, description="Files to read (each like `path` of read_file); up to 50."
    )
    max_lines_per_file: int | None = Field(
        default=None, ge=1, le=1_000_000, description="Return at most this many lines of each file (from the top)."
    )


class FileContent(ToolResult):
    path: str = Field(description="The path as given (or its real path when read).")
    success: bool
    content: str | None = None
    encoding: str | None = None
    total_lines: int | None = None
    truncated: bool = False
    error_code: str | None = None
    error: str | None = None


class ReadMultipleResult(ToolResult):
    files: list[FileContent]
    succeeded: int
    failed: int

    def render_text(self) -> str:
        parts = []
        for item in self.files:
            if item.success:
                note = " [truncated]" if item.truncated else ""
                parts.append(f"=== {item.path}{note} ===\n{item.content or ''}")
            else:
                parts.append(f"=== {item.path} === [{item.error_code}] {item.error}")
        return "\n\n".join(parts)


# -- write_file / edit_file --------------------------------------------------------------------------------


class WriteFileInput(ToolInput):
    path: str = _path_field()
    content: str = Field(max_length=20_000_000, description="The complete new content of the file.")
    encoding: Literal["utf-8", "utf-16", "latin-1"] = Field(default="utf-8", description="Encoding to write.")
    create_parents: bool = Field(default=False, description="Create missing parent directories.")
    overwrite: bool = Field(default=True, description="Replace the file if it exists (false: fail instead).")
    undoable: bool = _undoable_field()


class WriteFileResult(ToolResult):
    path: str
    bytes_written: int
    created: bool = Field(description="True if the file did not exist before.")
    change_id: int | None = CHANGE_ID


class EditSpec(ToolInput):
    old_text: str = Field(min_length=1, max_length=1_000_000, description="Exact text to find (whitespace counts).")
    new_text: str = Field(max_length=1_000_000, description="Text to put in its place.")
    replace_all: bool = Field(default=False, description="Replace every occurrence (otherwise it must be unique).")


class EditFileInput(ToolInput):
    path: str = _path_field()
    edits: list[EditSpec] = Field(
        min_length=1, max_length=100, description="Replacements applied in order; all succeed or none is applied."
    )
    dry_run: bool = Field(default=False, description="Only compute the diff; do not change the file.")
    undoable: bool = _undoable_field()


class EditFileResult(ToolResult):
    path: str
    applied: bool = Field(description="Whether the file was changed (false for dry runs and no-op edits).")
    replacements: int
    diff: str = Field(description="Unified diff of the change.")
    diff_truncated: bool = False
    change_id: int | None = CHANGE_ID

    def render_text(self) -> str:
        state = "applied" if self.applied else "not applied (dry run or no change)"
        return f"{self.path}: {self.replacements} replacement(s), {state}\n{self.diff}"


# -- listing ------------------------------------------------------------------------------------------------


class ListDirectoryInput(ToolInput):
    path: str = _path_field(default=".")
    show_hidden: bool = Field(default=False, description="Include entries whose name starts with '.'.")
    sort_by: Literal["name", "size", "modified", "type"] = Field(default="name", description="Sort key.")
    reverse: bool = Field(default=False, description="Reverse the order.")
    limit: int = Field(default=200, ge=1, le=5_000, description="Entries per page (continue with `cursor`).")
    cursor: str | None = CURSOR


class DirectoryEntry(CompactItem):
    name: str
    type: Literal["file", "directory", "symlink", "other"]
    size_bytes: int | None = None
    modified: str | None = Field(default=None, description="Last modification time, ISO 8601 UTC.")
    link_target: str | None = Field(default=None, description="For symlinks: where the link points (not followed).")
    protected: bool = Field(default=False, description="Matches a deny glob: file tools will not open it.")


class ListDirectoryResult(ToolResult):
    path: str
    entries: list[DirectoryEntry]
    total_entries: int = Field(description="Entries in the directory (all pages).")
    truncated: bool = Field(description="The directory holds more entries than the server lists at all.")
    next_cursor: str | None = NEXT_CURSOR

    def render_text(self) -> str:
        shown = (
            f"{len(self.entries)} of {self.total_entries} entries"
            if self.next_cursor
            else f"{self.total_entries} entries"
        )
        lines = [f"{self.path} ({shown}{', truncated' if self.truncated else ''})"]
        for entry in self.entries:
            if entry.type == "directory":
                lines.append(f"[DIR]  {entry.name}/")
            elif entry.type == "symlink":
                lines.append(f"[LINK] {entry.name} -> {entry.link_target}")
            elif entry.type == "file":
                lines.append(f"[FILE] {entry.name} ({entry.size_bytes} bytes)")
            else:
                lines.append(f"[OTHER] {entry.name}")
        if self.next_cursor:
            lines.append(f"[more: call again with cursor={self.next_cursor}]")
        return "\n".join(lines)


class DirectoryTreeInput(ToolInput):
    path: str = _path_field(default=".")
    max_depth: int = Field(default=3, ge=1, le=20, description="How many directory levels to descend.")
    max_entries: int = Field(default=10_000, ge=1, le=10_000, description="Most entries walked (all pages).")
    exclude: list[Glob] = GLOB_LIST
    show_hidden: bool = Field(default=False, description="Include entries whose name starts with '.'.")
    respect_gitignore: bool = Field(default=True, description="Skip what .gitignore files ignore (and .git).")
    limit: int = Field(default=300, ge=1, le=5_000, description="Entries per page (continue with `cursor`).")
    cursor: str | None = CURSOR


class TreeEntry(CompactItem):
    path: str = Field(description="Path relative to the tree's root.")
    type: Literal["file", "directory", "symlink"]
    depth: int
    size_bytes: int | None = None


class DirectoryTreeResult(ToolResult):
    path: str
    entries: list[TreeEntry]
    total_entries: int = Field(description="Entries in the tree as walked (all pages).")
    truncated: bool = Field(description="The walk stopped at `max_entries`: the tree holds more.")
    next_cursor: str | None = NEXT_CURSOR

    def render_text(self) -> str:
        lines = [self.path]
        for entry in self.entries:
            name = entry.path.rsplit("/", 1)[-1]
            suffix = "/" if entry.type == "directory" else " ->" if entry.type == "symlink" else ""
            lines.append("  " * entry.depth + name + suffix)
        if self.next_cursor:
            lines.append(f"[{len(self.entries)} of {self.total_entries} entries; more with cursor={self.next_cursor}]")
        if self.truncated:
            lines.append("[truncated: lower max_depth or add exclude patterns]")
        return "\n".join(lines)


class GlobFilesInput(ToolInput):
    pattern: str = Field(
        min_length=1,
        max_length=1000,
        description="Glob relative to `path`: '*' and '?' within a name, '**' across directories, '[abc]', "
        "'{a,b}'. Example: '**/*.py', 'src/**/test_*.{js,ts}'. No '..', not absolute.",
    )
    path: str = _path_field(description="Directory the pattern is matched from (default: the first root).", default=".")
    respect_gitignore: bool = Field(default=False, description="Skip what .gitignore files ignore (and .git).")
    include_hidden: bool = Field(default=False, description="Match entries whose name starts with '.'.")
    include_directories: bool = Field(default=False, description="Also return matching directories.")
    exclude: list[Glob] = GLOB_LIST
    max_results: int = Field(default=20_000, ge=1, le=20_000, description="Most matches collected (all pages).")
    limit: int = Field(default=300, ge=1, le=5_000, description="Matches per page (continue with `cursor`).")
    cursor: str | None = CURSOR


class GlobFilesResult(ToolResult):
    base: str = Field(description="Directory the returned paths are relative to.")
    pattern: str
    matches: list[str]
    count: int = Field(description="Matches on this page.")
    total_matches: int = Field(description="Matches found (all pages).")
    truncated: bool = Field(description="Collection stopped at `max_results` or the walk's entry cap.")
    timed_out: bool
    next_cursor: str | None = NEXT_CURSOR

    def render_text(self) -> str:
        header = f"{self.total_matches} match(es) under {self.base}" + (" (truncated)" if self.truncated else "")
        more = [f"[{self.count} shown; more with cursor={self.next_cursor}]"] if self.next_cursor else []
        return "\n".join([header, *self.matches, *more])


class SearchFilesInput(ToolInput):
    pattern: str = Field(min_length=1, max_length=1000, description="Text to find (literal unless regex=true).")
    path: str = _path_field(description="Directory (or single file) to search (default: the first root).", default=".")
    regex: bool = Field(
        default=False,
        description="Treat `pattern` as a Python regular expression (matched per line; without ripgrep, nested "
        "unbounded repetitions and backreferences are refused).",
    )
    case_sensitive: bool = Field(default=True, description="Match case exactly.")
    include: list[Glob] = Field(
        default_factory=list,
        max_length=50,
        description="Only search files matching one of these globs (e.g. '*.py', 'src/**/*.ts').",
    )
    exclude: list[Glob] = GLOB_LIST
    context_lines: int = Field(default=0, ge=0, le=10, description="Lines of context before and after each match.")
    max_results: int = Field(default=200, ge=1, le=5000, description="Most matching lines returned.")
    respect_gitignore: bool = Field(default=True, description="Skip what .gitignore files ignore (and .git).")
    include_hidden: bool = Field(default=False, description="Search entries whose name starts with '.'.")


class SearchMatch(CompactItem):
    path: str = Field(description="File path relative to `base`.")
    line_number: int
    line: str
    before: list[str] = Field(default_factory=list)
    after: list[str] = Field(default_factory=list)


class SearchFilesResult(ToolResult):
    base: str
    matches: list[SearchMatch]
    files_searched: int
    files_matched: int
    files_skipped: int = Field(description="Binary, oversized or unreadable files that were not searched.")
    truncated: bool
    timed_out: bool
    note: str | None = Field(
        default=None, description="When a literal search found nothing and the pattern looks like a regular expression."
    )

    def render_text(self) -> str:
        lines = [
            f"{len(self.matches)} match(es) in {self.files_matched} file(s) under {self.base}"
            + (" (truncated)" if self.truncated else "")
            + (" (time budget reached: partial)" if self.timed_out else "")
        ]
        if self.note:
            lines.append(self.note)
        for match in self.matches:
            for offset, text in enumerate(match.before):
                lines.append(f"{match.path}-{match.line_number - len(match.before) + offset}-{text}")
            lines.append(f"{match.path}:{match.line_number}:{match.line}")
            for offset, text in enumerate(match.after):
                lines.append(f"{match.path}-{match.line_number + 1 + offset}-{text}")
        return "\n".join(lines)


# -- entries ---------------------------------------------------------------------------------------------------


class PathInput(ToolInput):
    path: str = _path_field()


class FileExistsResult(ToolResult):
    path: str
    exists: bool
    type: Literal["file", "directory", "symlink", "other"] | None = None


class FileInfoResult(ToolResult):
    path: str = Field(description="Real path.")
    type: Literal["file", "directory", "symlink", "other"]
    size_bytes: int
    modified: str
    created: str = Field(description="Creation time where the OS records it, else the status-change time.")
    accessed: str
    permissions: str = Field(description="Like ls -l, e.g. -rw-r--r--.")
    mode: str = Field(description="Permission bits in octal.")
    hard_links: int
    is_symlink: bool = Field(description="Whether the path as given is a symbolic link.")
    link_target: str | None = None
    mime_type: str | None = None
    is_binary: bool | None = None
    entries: int | None = Field(default=None, description="For directories: number of direct entries.")


class DeletePathInput(ToolInput):
    path: str = _path_field()
    recursive: bool = Field(default=False, description="Required to delete a directory (and everything in it).")
    undoable: bool = _undoable_field()


class DeletePathResult(ToolResult):
    path: str
    type: str
    entries_deleted: int
    change_id: int | None = CHANGE_ID


class MoveFileInput(ToolInput):
    source: str = _path_field(description="Entry to move (file, directory or symlink itself). " + PATH_DESCRIPTION)
    destination: str = _path_field(description="Full new path (not just a directory). " + PATH_DESCRIPTION)
    overwrite: bool = Field(default=False, description="Replace an existing file at the destination.")
    undoable: bool = _undoable_field()


class _Transferred(ToolResult):
    """What moving and copying share: the entry, where it went, its type."""

    source: str
    destination: str
    type: str


class MoveFileResult(_Transferred):
    overwritten: bool
    change_id: int | None = CHANGE_ID


class CopyFileInput(ToolInput):
    source: str = _path_field(description="File or directory to copy. " + PATH_DESCRIPTION)
    destination: str = _path_field(description="Full path of the copy (not just a directory). " + PATH_DESCRIPTION)
    overwrite: bool = Field(default=False, description="Replace an existing file at the destination.")
    recursive: bool = Field(default=False, description="Required to copy a directory tree.")
    undoable: bool = _undoable_field()


class CopyFileResult(_Transferred):
    files_copied: int
    overwritten: bool
    change_id: int | None = CHANGE_ID


class CreateDirectoryInput(ToolInput):
    path: str = _path_field()
    parents: bool = Field(default=True, description="Also create missing parent directories (like mkdir -p).")


class CreateDirectoryResult(ToolResult):
    path: str
    created: bool = Field(description="False when the directory already existed.")
    change_id: int | None = CHANGE_ID


# -- undo ------------------------------------------------------------------------------------------------------

MAX_CHANGE_ID = 2**53  # JSON-safe integer; ids count up from 1


class ListFileChangesInput(ToolInput):
    limit: int = Field(default=20, ge=1, le=200, description="Changes to return, newest first.")
    before_id: int | None = Field(
        default=None,
        ge=1,
        le=MAX_CHANGE_ID,
        description="Only changes older than this id (pass `next_before_id` of the previous page).",
    )


class FileChange(CompactItem):
    id: int = Field(description="The change_id to pass to undo_file_change.")
    time: str = Field(description="When it was made, ISO 8601 UTC.")
    tool: str = Field(description="The tool that made it (undo_file_change for an undo).")
    path: str = Field(description="The path it changed (for a move or copy: the destination).")
    source: str | None = Field(default=None, description="For a move or copy: where it came from.")
    size_bytes: int = Field(description="Bytes of earlier content the journal keeps for it.")
    status: Literal["done", "undone", "interrupted"] = Field(
        description="done; undone (see undone_by); interrupted: the process stopped while making it, so what it "
        "changed is not known (undo_file_change restores what was there before, with force=true if needed)."
    )
    undoes: int | None = Field(default=None, description="For an undo: the change it undid.")
    undone_by: int | None = Field(default=None, description="The undo that undid this change.")
    note: str | None = None


class ListFileChangesResult(ToolResult):
    changes: list[FileChange]
    next_before_id: int | None = Field(default=None, description="Pass as `before_id` for older changes.")
    journal_changes: int = Field(description="Changes in the journal (all roots).")
    journal_bytes: int = Field(description="Bytes of earlier contents the journal keeps.")
    max_total_bytes: int = Field(description="The journal's limit; the oldest changes are dropped past it.")

    def render_text(self) -> str:
        if not self.changes:
            return "No file changes recorded in the roots in force."
        lines = []
        for item in self.changes:
            where = f"{item.source} -> {item.path}" if item.source else item.path
            flags = "" if item.status == "done" else f" [{item.status}]"
            lines.append(f"#{item.id} {item.time} {item.tool} {where} ({item.size_bytes} bytes kept){flags}")
        if self.next_before_id:
            lines.append(f"[older: before_id={self.next_before_id}]")
        return "\n".join(lines)


class UndoFileChangeInput(ToolInput):
    change_id: int | None = Field(
        default=None,
        ge=1,
        le=MAX_CHANGE_ID,
        description="The change to undo (see list_file_changes); default: the newest change not undone yet (undos "
        "aside), so calling again walks further back. Pass an undo's own id to redo what it undid.",
    )
    force: bool = Field(
        default=False,
        description="Undo even where a path changed since (or a moved entry's old path is taken now); what stands "
        "there is kept in the undo's own record first.",
    )


class UndoAction(ToolResult):
    path: str
    action: str = Field(description="restored, created, deleted, moved back from ...")


class UndoFileChangeResult(ToolResult):
    undone_id: int = Field(description="The change that was undone.")
    undone_tool: str
    change_id: int | None = Field(
        default=None, description="This undo's own id in the journal (undo it to make the change again)."
    )
    actions: list[UndoAction]
    forced: list[str] = Field(default_factory=list, description="Paths that had changed since, overridden by force.")
    kept: list[str] = Field(default_factory=list, description="What was left in place, and why.")
    message: str

    def render_text(self) -> str:
        lines = [self.message]
        lines += [f"{item.action}: {item.path}" for item in self.actions]
        lines += [f"overridden (force): {path}" for path in self.forced]
        lines += [f"kept: {text}" for text in self.kept]
        return "\n".join(lines)


# -- install_package / roots --------------------------------------------------------------------------------


MAX_SPEC_CHARS = 500  # npm names stop at 214 characters; a version range or pip extras and clauses add little


class InstallPackageInput(ToolInput):
    manager: Literal["npm", "pip"] = Field(description="Package manager.")
    packages: list[Annotated[str, Field(max_length=MAX_SPEC_CHARS)]] = Field(
        default_factory=list,
        max_length=20,
        description="Package specs: npm 'name', 'name@1.2.3', '@scope/name@^2'; pip 'name', 'name==1.2', "
        "'name[extra]>=1,<2', or a local project inside the roots, relative to `path` ('.', '.[test]', './lib'). "
        "No options or URLs. Empty with npm: the project's own dependencies (npm install).",
    )
    path: str = _path_field(description="Project directory (default: the first root). " + PATH_DESCRIPTION, default=".")
    dev: bool = Field(default=False, description="npm only: save as a dev dependency.")
    editable: bool = Field(
        default=False, description="pip only: install the local projects in editable mode (pip install -e '.[test]')."
    )
    requirements: list[Annotated[str, Field(max_length=4096)]] = Field(
        default_factory=list,
        max_length=10,
        description="pip only: requirements files inside the roots, relative to `path` (pip install -r FILE).",
    )


class InstallPackageResult(ToolResult):
    manager: str
    packages: list[str]
    command: list[str]
    cwd: str
    environment: str = Field(description="Where the packages went.")
    exit_code: int
    output: str = Field(description="The end of the installer's output.")
    sandbox: Literal["bubblewrap", "seatbelt", "off"] = Field(description="How the installer was confined by the OS.")
    warning: str | None = Field(default=None, description="Set when it ran unconfined (sandbox = 'off').")
    blocked: list[str] = Field(
        default_factory=list,
        description="Destinations the installer tried beyond the configured registries (refused by the egress proxy).",
    )


class NoInput(ToolInput):
    pass


class ListRootsResult(ToolResult):
    roots: list[str] = Field(description="Directories in force; relative paths resolve against the first.")
    source: Literal["configured", "client", "intersection"] = Field(
        description="configured: --root/MCP_SECTIONS_ROOTS; client: the client's MCP roots; intersection: "
        "client roots narrowed to the configured ones."
    )
    configured_roots: list[str]
    client_roots: list[str] | None = Field(default=None, description="The client's roots (file:// URIs), if any.")
    deny_globs: list[str]

    def render_text(self) -> str:
        if not self.roots:
            return f"No roots in force (source: {self.source}); every path is refused."
        return "Allowed roots (" + self.source + "):\n" + "\n".join(self.roots)
