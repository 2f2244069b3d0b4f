"""What every file_ops tool does around its work: the guard for the call's roots, the blocking work in a worker
thread with OS errors as coded failures, and a change recorded in the undo journal."""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread

from mcp_sections.servers.file_ops.state import FileOpsState
from mcp_sections.shared.confinement.guards.paths import PathGuard, Purpose
from mcp_sections.shared.framework.tools import Annotations, ToolContext
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

if TYPE_CHECKING:
    from mcp_sections.servers.file_ops.journal import Journal

logger = logging.getLogger("mcp_sections.file_ops")

T = TypeVar("T")

EDIT = Annotations(read_only=False, destructive=True, idempotent=False, open_world=False)
MOVE = Annotations(read_only=False, destructive=True, idempotent=False, open_world=False)


def within_roots(state: FileOpsState, *paths: tuple[str, Purpose]) -> None:
    """A preflight (`shared.serving.preflight`): each path checked by the configured guard for what the call does with
    it (PERMISSION_DENIED outside the roots, for protected names). A call's own guard is never wider (a client's roots
    narrow it), so what this refuses the call refuses; with no configured roots, nothing (a client's may be used)."""
    if state.configured.roots:
        for path, purpose in paths:
            state.configured.resolve(path, purpose=purpose)


async def guard_of(state: FileOpsState, ctx: ToolContext | None) -> PathGuard:
    """The guard in force for this call (the client's roots within the configured ones)."""
    guard, _, _ = await guard_and_source(state, ctx)
    return guard


async def guard_and_source(state: FileOpsState, ctx: ToolContext | None) -> tuple[PathGuard, str, list[str] | None]:
    """The guard in force, where its roots come from, and the client's root URIs (None: not asked or none)."""
    uris: list[str] | None = None
    if ctx is not None and state.settings.use_client_roots:
        try:
            uris = await ctx.client_roots()
        except Exception:  # a client that advertises roots but fails roots/list: use the configured ones
            logger.warning("roots/list failed; using the configured roots", exc_info=True)
            uris = None
    guard, source = state.guard_for(uris)
    return guard, source, uris


_OS_ERRORS = {
    errno.EACCES: (ErrorCode.PERMISSION_DENIED, "the operating system denied access"),
    errno.EPERM: (ErrorCode.PERMISSION_DENIED, "the operating system does not permit this operation"),
    errno.EROFS: (ErrorCode.PERMISSION_DENIED, "the file system is read-only"),
    errno.ENOENT: (ErrorCode.NOT_FOUND, "a file or directory disappeared while the call ran; retry"),
    errno.ENOTEMPTY: (ErrorCode.VALIDATION_FAILED, "the directory is not empty"),
    errno.EEXIST: (ErrorCode.VALIDATION_FAILED, "the entry already exists"),
    errno.ENOSPC: (ErrorCode.EXECUTION_FAILED, "the disk is full"),
    errno.EDQUOT: (ErrorCode.EXECUTION_FAILED, "the disk quota is exceeded"),
    errno.ENAMETOOLONG: (ErrorCode.INVALID_INPUT, "a file name is too long"),
    errno.ENOTDIR: (ErrorCode.INVALID_INPUT, "a path component is not a directory"),
    errno.EISDIR: (ErrorCode.INVALID_INPUT, "the path is a directory"),
    errno.ELOOP: (ErrorCode.PERMISSION_DENIED, "a symbolic link is in the way (links are not followed here)"),
}


async def work(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run blocking file work in a worker thread; OS errors become coded failures without paths in them."""
    try:
        return await anyio.to_thread.run_sync(partial(function, *args, **kwargs))
    except OSError as exc:
        raise os_failure(exc) from None


async def guarded(state: FileOpsState, ctx: ToolContext | None, function: Callable[..., T], *args: Any, **kw: Any) -> T:
    """`function(guard, *args, **kw)` in a worker thread, with the guard in force for this call."""
    guard = await guard_of(state, ctx)
    return await work(function, guard, *args, **kw)


async def changed(
    state: FileOpsState,
    ctx: ToolContext | None,
    tool: str,
    undoable: bool,
    function: Callable[..., T],
    *args: Any,
    **kw: Any,
) -> T:
    """`function(guard, *args, change=..., **kw)` in a worker thread, recorded in the undo journal as `tool`'s."""
    guard = await guard_of(state, ctx)
    return await work(_recorded, state, tool, guard, undoable, function, guard, *args, **kw)


def os_failure(exc: OSError) -> ToolFailure:
    code, text = _OS_ERRORS.get(exc.errno or 0, (ErrorCode.EXECUTION_FAILED, "the operation failed"))
    return ToolFailure(code, f"{text} ({exc.strerror or type(exc).__name__}).")


def _recorded(
    state: FileOpsState, tool: str, guard: PathGuard, undoable: bool, function: Callable[..., T], *args: Any, **kw: Any
) -> T:
    """Run one change in the undo journal's lock, recorded (`journal.Change`); in a worker thread."""
    from mcp_sections.servers.file_ops.journal import changing

    with changing(state.journal, tool, guard, undoable=undoable) as change:
        return function(*args, change=change, **kw)


def journal_of(state: FileOpsState) -> Journal:
    """The undo journal, or VALIDATION_FAILED when it is off on this server."""
    journal = state.journal
    if journal is None:
        raise ToolFailure(
            ErrorCode.VALIDATION_FAILED,
            "the undo journal is off on this server ([sections.file_ops] undo_enabled = false, or no data "
            "directory); file changes are not recorded, so none can be listed or undone.",
        )
    return journal
