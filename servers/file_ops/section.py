"""The file_ops section: files and directories inside the allowed roots, behind the shared path guard.

The declaration; the tools are in `tools/` by domain (reading, writing, finding, entries, undo, packages and roots),
each thin glue over the domain module that does the work."""

from __future__ import annotations

from mcp_sections.servers.file_ops.settings import FileOpsSettings
from mcp_sections.servers.file_ops.state import FileOpsState
from mcp_sections.servers.file_ops.tools.entries import (
    copy_file,
    create_directory,
    delete_path,
    file_exists,
    get_file_info,
    move_file,
)
from mcp_sections.servers.file_ops.tools.finding import directory_tree, glob_files, list_directory, search_files
from mcp_sections.servers.file_ops.tools.packages import install_package, list_allowed_roots
from mcp_sections.servers.file_ops.tools.reading import read_file, read_multiple_files
from mcp_sections.servers.file_ops.tools.undo import list_file_changes, undo_file_change
from mcp_sections.servers.file_ops.tools.writing import edit_file, write_file
from mcp_sections.shared.framework.requirements import Requirement, no_sandbox, program
from mcp_sections.shared.framework.sections import Container, Section, SectionRuntime


def open_state(runtime: SectionRuntime) -> FileOpsState:
    settings = runtime.settings_of(FileOpsSettings)
    return FileOpsState(
        list(runtime.settings.roots),
        settings,
        private=runtime.settings.own_state_paths(),
        data_dir=runtime.settings.data_dir,
        config=(runtime.settings.config_file, runtime.settings.sections),
    )


SECTION = Section(
    id="file_ops",
    requirements=(
        Requirement(
            "ripgrep (fast search_files engine)",
            program("rg"),
            "apt-get install ripgrep",
            optional=True,
            without="search_files on Python's regular-expression engine (slower, with its guards)",
        ),
        Requirement(
            "OS sandbox (install_package): bubblewrap, or Seatbelt on macOS",
            no_sandbox,
            "apt-get install bubblewrap (or sandbox = 'off')",
            optional=True,
            without="every tool but install_package",
        ),
    ),
    output_source="file",
    container=Container(stage="runtime-tools", workspace="write"),
    name="File operations",
    description="Read, write, edit, list, glob and search files inside allowed root directories; install packages.",
    instructions=(
        "All paths must lie inside the allowed roots (list_allowed_roots); relative paths start at the first "
        "root. Prefer edit_file for changes to existing files and read_file windows (offset/limit, head, tail) "
        "for large files. Secrets (.env, keys) are never readable, and secret values inside other files come back "
        "as ***MASKED***; writes that contain the mask are refused (they would overwrite the real value). Every "
        "change is recorded: list_file_changes shows them, undo_file_change takes the last one (or one by id) back."
    ),
    tools=(
        read_file,
        read_multiple_files,
        write_file,
        edit_file,
        list_directory,
        directory_tree,
        glob_files,
        search_files,
        file_exists,
        get_file_info,
        create_directory,
        delete_path,
        move_file,
        copy_file,
        list_file_changes,
        undo_file_change,
        install_package,
        list_allowed_roots,
    ),
    settings_model=FileOpsSettings,
    open_state=open_state,
    masks_secrets=True,
)
