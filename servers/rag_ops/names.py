"""How a caller names a node: an exact name (`process`), or a qualified one — `Class.method` (the scope's qualname),
`module.function` or `package.module.Class.method` (the file's module, or its tail, before the qualname),
`path/to/file.py::Class.method` or `file.py:function` (a path, or its tail, before the qualname) — or a file's path.

`qualified_nodes` reads a qualified name over the store's own filters (the scope's last name, its qualname property),
so every backend answers it; `reference_for` gives, among nodes sharing a name, the shortest name that tells each
apart, the one `resolve_node` lists when a plain name is ambiguous.
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Sequence
from typing import Any

from mcp_sections.shared.brain.model import EntityFilter, Node

MAX_QUALIFIED = 500  # nodes one qualified name may match (far more than a real one does)


def looks_qualified(reference: str) -> bool:
    """Whether `reference` may be a qualified name or a path (it holds '.', ':' or '/')."""
    return any(mark in reference for mark in ".:/")


def qualified_nodes(store: Any, reference: str, base: EntityFilter) -> list[Node]:
    """The nodes `reference` names as a qualified name or a path, within `base`'s filters (label, project, path,
    properties; its name and paging are replaced), in the store's order."""
    text = reference.strip()
    path, separator, qualname = _split_path(text)
    if separator:
        found = _scopes(store, qualname, base)
        return [node for node in found if _tail_of(node.path.split("/"), path.split("/"))]
    if "/" in text:  # a file's path, or its tail
        parts = [part for part in text.removeprefix("./").split("/") if part]
        files = _query(store, dataclasses.replace(base, name=parts[-1] if parts else text, name_match="exact"))
        return [node for node in files if node.label == "File" and _tail_of(node.path.split("/"), parts)]
    parts = text.split(".")
    matches: dict[str, Node] = {}
    for start in range(len(parts)):
        module = parts[:start]
        found = _scopes(store, ".".join(parts[start:]), base)
        if module:
            found = _in_module(store, found, module)
        matches.update((node.id, node) for node in found)
    return sorted(matches.values(), key=lambda n: (n.project_id, n.path, n.start_line or 0, n.id))


def reference_for(node: Node, among: Sequence[Node], plain: str) -> str:
    """The shortest reference telling `node` from the others `among` (which share the name `plain`): its qualname,
    else `path::qualname`, else its id (a file: its path, else its id)."""
    if node.label == "File":
        same = [other for other in among if other.label == "File" and other.path == node.path]
        return node.path if len(same) == 1 and node.path != plain else node.id
    qualname = str(node.props.get("qualname") or "")
    if not qualname:
        return node.id
    same = [other for other in among if other.props.get("qualname") == qualname]
    if qualname != plain and len(same) == 1:
        return qualname
    if node.path and len([other for other in same if other.path == node.path]) == 1:
        return f"{node.path}::{qualname}"
    return node.id


# ---- helpers -------------------------------------------------------------------------------------------


def _split_path(text: str) -> tuple[str, str, str]:
    """`path::qualname` or `path:qualname` as (path, separator, qualname); ('', '', '') without one."""
    for separator in ("::", ":"):
        path, found, qualname = text.rpartition(separator)
        if found and path and qualname:
            return path.removeprefix("./").strip("/"), found, qualname
    return "", "", ""


def _scopes(store: Any, qualname: str, base: EntityFilter) -> list[Node]:
    """The nodes whose qualname property is `qualname`, found by their last name (`a.b#2`'s name is `b`) or, for a
    route or a block named from its code, the whole of it (`router.get /files/:name.json`, `describe orders API`)."""
    if base.properties.get("qualname", qualname) != qualname or not qualname:
        return []
    names = (qualname.rsplit(".", 1)[-1].split("#", 1)[0], qualname.split("#", 1)[0] if " " in qualname else "")
    properties = {**base.properties, "qualname": qualname}
    return [
        node
        for name in dict.fromkeys(name for name in names if name)
        for node in _query(store, dataclasses.replace(base, name=name, name_match="exact", properties=properties))
    ]


def _query(store: Any, flt: EntityFilter) -> list[Node]:
    nodes, _ = store.query_entities(dataclasses.replace(flt, limit=MAX_QUALIFIED, offset=0))
    return list(nodes)


def _in_module(store: Any, nodes: list[Node], module: list[str]) -> list[Node]:
    """The nodes whose file is the module named by `module` (its dotted name, or the tail of it or of its path)."""
    files = {f.id: f for f in store.get_nodes(list({n.file_id for n in nodes if n.file_id}))} if nodes else {}
    kept = []
    for node in nodes:
        file = files.get(node.file_id or "")
        declared = str(file.props.get("module") or "") if file is not None else ""
        stem = posixpath.splitext(node.path)[0].split("/")
        if stem and stem[-1] in ("__init__", "index", "mod"):
            stem = stem[:-1]
        if _tail_of(declared.replace("/", ".").split("."), module) or _tail_of(stem, module):
            kept.append(node)
    return kept


def _tail_of(whole: Sequence[str], tail: Sequence[str]) -> bool:
    """Whether `tail` ends `whole`, component by component."""
    return bool(tail) and len(tail) <= len(whole) and list(whole[len(whole) - len(tail) :]) == list(tail)
