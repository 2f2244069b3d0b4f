"""The table of the trusted base (`mcp-sections trusted-base`): every part and how it is protected, for given roots.

Presentation only: `shared.confinement.trusted_base` computes the base, `shared.confinement.sandbox` the binds a program
on the search path gets; this module puts both side by side for a person to read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_sections.shared.confinement.sandbox import install_prefixes
from mcp_sections.shared.confinement.trusted_base import SYSTEM_PREFIXES, Part, Way, hidden_entries, process_base
from mcp_sections.shared.ground.locations import is_inside


@dataclass(frozen=True)
class Row:
    """One line of the trusted-base table: an entry and how it is protected, for given roots."""

    entry: str
    what: str
    where: str
    programs: str
    file_tools: str


def describe(roots: Sequence[Path], state: Iterable[tuple[str, str, str]], search_path: str = "") -> list[Row]:
    """The trusted base of this process with these roots and this state (named, real, what), every entry with its
    protection: what sandboxed programs get, what file tools do — and the program prefixes the search path binds."""
    real_roots = [os.path.realpath(os.fspath(root)) for root in roots]
    base = process_base().with_state(state)
    read_only = base.read_only(real_roots)
    rows = [_part_row(part, real_roots, read_only) for part in base.parts]
    rows += _way_rows(base.way(real_roots))
    return rows + _search_path_rows(search_path, real_roots, state)


def _part_row(part: Part, real_roots: list[str], read_only: Sequence[str]) -> Row:
    """A part of the base: where it lies, what programs get of it, what file tools may do there."""
    shown = part.named if part.named == part.real else f"{part.named} -> {part.real}"
    inside = next((root for root in real_roots if is_inside(part.real, root) or is_inside(part.named, root)), None)
    where = "system directory" if part.system else (f"inside the root {inside}" if inside else "outside the roots")
    if part.kind == "state":
        programs = "hidden: empty read-only tmpfs (a file: /dev/null)" if inside else "not shown (outside)"
        tools = "refused: outside every root"
    elif part.system:
        programs, tools = "read-only (system directories)", "read-only (outside the roots)"
    elif inside and not any(is_inside(part.real, place) for place in read_only):
        programs, tools = "writable: holds a root (warned at start)", "allowed (holds a root)"
    elif inside:
        programs, tools = "read-only bind", "refused: write, create, move, delete"
    else:
        programs, tools = "not shown (outside), unless verified and bound read-only", "outside the roots"
    return Row(shown, f"{part.kind}: {part.what}", where, programs, tools)


def _way_rows(way: Way) -> list[Row]:
    """The directories and links on the way to the roots: pinned, and those whose entries are fixed."""
    home = os.path.realpath(os.path.expanduser("~"))
    hidden = [os.path.join(home, name) for name in hidden_entries(home)] if Path(home) in way.fixed else []
    configuration = [*hidden, *(os.path.realpath(entry) for entry in hidden if os.path.islink(entry))]
    rows: list[Row] = []
    for path in way.pinned:
        in_configuration = any(is_inside(str(path), place) for place in configuration)
        shown = "read-only (the home's configuration)" if in_configuration else "pinned (bound onto itself)"
        rows.append(Row(str(path), "way: directory on the way", "inside a root", shown, "never moved or deleted"))
    for path in way.links:
        target = os.path.realpath(path)
        rows.append(
            Row(
                f"{path} -> {target}",
                "way: link on the way",
                "inside a root",
                "pinned as a link (its directory fixed) and by its target",
                "never moved, deleted or replaced",
            )
        )
    for path in way.fixed:
        shown = "read-only; each entry bound back writable"
        if str(path) == home:
            shown = "read-only; its ordinary entries bound back writable, its hidden ones (and their targets) read-only"
        rows.append(Row(str(path), "way: directory with fixed entries", "inside a root", shown, "never moved, deleted"))
    return rows


def _search_path_rows(search_path: str, real_roots: list[str], state: Iterable[tuple[str, str, str]]) -> list[Row]:
    """The programs on the search path outside the system directories (20 a directory) and what each binds."""
    rows: list[Row] = []
    for directory in search_path.split(os.pathsep):
        if not directory or any(is_inside(os.path.realpath(directory), place) for place in SYSTEM_PREFIXES):
            continue
        if any(is_inside(os.path.realpath(directory), root) for root in real_roots):
            rows.append(
                Row(directory, "search path entry", "inside a root", "ignored (a program could plant tools there)", "-")
            )
            continue
        try:
            found = sorted(entry.path for entry in os.scandir(directory) if entry.is_file())
        except OSError:
            continue
        for program in found[:20]:
            prefixes = install_prefixes(program)
            hidden = [s for _, s, _ in state if any(is_inside(s, bind) for bind in prefixes)]
            note = f"; hidden inside: {', '.join(hidden)}" if hidden else ""
            binds = ", ".join(prefixes)
            rows.append(
                Row(program, "program on the search path", "outside the roots", f"binds read-only: {binds}{note}", "-")
            )
    return rows
