"""The reading tools: read_file (a window of a text, or an image) and read_multiple_files."""

from __future__ import annotations

from mcp_sections.servers.file_ops.models import (
    FileContent,
    ReadFileInput,
    ReadFileResult,
    ReadMultipleInput,
    ReadMultipleResult,
)
from mcp_sections.servers.file_ops.state import FileOpsState
from mcp_sections.servers.file_ops.tools.calls import guard_of, guarded, os_failure, work
from mcp_sections.shared.framework.resources import INLINE_CHARS, split_inline
from mcp_sections.shared.framework.tools import READ_ONLY, ToolContext, tool
from mcp_sections.shared.ground.errors import ToolFailure


@tool(
    name="read_file",
    title="Read a file",
    annotations=READ_ONLY,
    examples=(
        "show me the contents of a config file",
        "read lines 100 to 150 of app.py",
        "the tail end of a log file",
        "view the first lines of a file",
        "what does this file say",
        "open src/main.py",
    ),
)
async def read_file(params: ReadFileInput, state: FileOpsState, ctx: ToolContext) -> ReadFileResult:
    """Read a text file (or an image) inside the allowed roots.

    Text: the encoding is detected (UTF-8, UTF-16/32 with BOM, Latin-1 fallback) and binary files are
    refused. Choose a window with `offset`+`limit` (1-based line numbers), `head` or `tail`; a whole-file
    read is limited to the server's read cap (4 MiB by default) — larger files must be read in windows.
    Images (PNG, JPEG, GIF, WebP) come back as MCP image content. Returns the text, the encoding and the
    line window (`start_line`, `end_line`, `total_lines`, `truncated`). A text longer than 16,000 characters
    comes back as its first lines up to that size, and whole by reference (`content_uri`, a resource link read
    with resources/read); offset/limit reads on from `end_line`.
    """
    from mcp_sections.servers.file_ops import reading

    settings = state.settings
    outcome = await guarded(
        state,
        ctx,
        reading.read_file,
        params.path,
        offset=params.offset,
        limit=params.limit,
        head=params.head,
        tail=params.tail,
        encoding=params.encoding,
        max_bytes=settings.max_read_bytes,
        max_image_bytes=settings.max_image_bytes,
    )
    result = ReadFileResult.model_validate(outcome)
    return result.with_image(outcome.image) if outcome.image is not None else _long_text_by_reference(result)


def _long_text_by_reference(result: ReadFileResult) -> ReadFileResult:
    """A text over the inline limit: its first lines inline, the whole of it as a resource
    (`shared.framework.resources`)."""
    whole = result.content
    if whole is None:
        return result
    inline, cut = split_inline(whole, INLINE_CHARS)
    if not cut:
        return result
    shown = inline.count("\n") + (0 if inline.endswith("\n") else 1)
    result.content, result.truncated = inline, True
    if result.start_line is not None:
        result.end_line = result.start_line + shown - 1
    name = result.path.rsplit("/", 1)[-1] or "file.txt"
    result.content_uri = result.attach(
        whole, name=name, mime_type="text/plain", description=f"The text read from {result.path[:300]}."
    )
    return result


@tool(
    name="read_multiple_files",
    title="Read several files",
    annotations=READ_ONLY,
    examples=(
        "read these five source files at once",
        "load several files in one go to review them",
        "show several files side by side",
        "read a list of files in one call",
        "read package.json, tsconfig.json and vite.config.ts",
        "fetch the text of several files in one request",
    ),
)
async def read_multiple_files(params: ReadMultipleInput, state: FileOpsState, ctx: ToolContext) -> ReadMultipleResult:
    """Read up to 50 text files in one call; a file that fails (missing, denied, binary, too large) gets its
    own error entry and does not fail the others.

    Use it to compare or review several files at once. The server's read cap is shared across the batch;
    `max_lines_per_file` keeps each file short. Images are not returned here (use read_file).
    """
    from mcp_sections.servers.file_ops import reading

    guard = await guard_of(state, ctx)
    settings = state.settings

    def read_all() -> ReadMultipleResult:
        budget = settings.max_read_bytes
        files: list[FileContent] = []
        for path in params.paths:
            try:
                outcome = reading.read_file(
                    guard,
                    path,
                    head=params.max_lines_per_file,
                    max_bytes=max(budget, 1),
                    max_image_bytes=settings.max_image_bytes,
                    images=False,
                )
            except (ToolFailure, OSError) as error:
                failure = os_failure(error) if isinstance(error, OSError) else error
                files.append(
                    FileContent(path=path, success=False, error_code=failure.code.value, error=failure.message)
                )
                continue
            if outcome.content is None:
                files.append(
                    FileContent(
                        path=path,
                        success=False,
                        error_code="INVALID_INPUT",
                        error="this is an image; read it with read_file.",
                    )
                )
                continue
            budget -= len(outcome.content)
            files.append(
                FileContent(
                    path=outcome.path,
                    success=True,
                    content=outcome.content,
                    encoding=outcome.encoding,
                    total_lines=outcome.total_lines,
                    truncated=outcome.truncated,
                )
            )
        ok = sum(1 for item in files if item.success)
        return ReadMultipleResult(files=files, succeeded=ok, failed=len(files) - ok)

    return await work(read_all)
