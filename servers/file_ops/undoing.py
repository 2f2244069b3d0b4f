"""Listing the undo journal and undoing one change (which is itself recorded, so it can be undone in turn).

An undo runs the change's operations backwards: a replaced entry gets its kept state back, a moved entry moves
back. Before anything is touched, every path is checked through the path guard (still inside the roots, not
protected, no symbolic link planted in its path since) and must hold what the change left there ("changed
since" = its content, type or link target differs, or a moved entry is another one now); a path a move vacated
must be free. Differences refuse the undo unless `force`, and then what stands there now is kept in the undo's
own record first. Directories a change created are removed only when empty.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure, not_found
from mcp_sections.shared.ground.locations import is_inside

from .entries import iso, rename_entry
from .journal import Change, Journal, Limits, Record, Rename, identity_of
from .states import ABSENT, State, checked_path, matches, remove, write_state

MAX_CONFLICTS_SHOWN = 10
UNDO_HINT = (
    "could not keep what stands there now. Nothing was changed; move or delete that entry first (or raise "
    "[sections.file_ops] undo_max_file_bytes / undo_max_total_bytes / undo_max_entries)."
)


# -- listing ----------------------------------------------------------------------------------------------------


@dataclass
class ChangeItem:
    id: int
    time: str
    tool: str
    path: str
    source: str | None
    size_bytes: int
    status: str
    undoes: int | None
    undone_by: int | None
    note: str | None


@dataclass
class ChangeList:
    changes: list[ChangeItem]
    next_before_id: int | None
    journal_changes: int
    journal_bytes: int
    max_total_bytes: int


def visible(guard: PathGuard, record: Record) -> bool:
    """A change is shown and undone only where the roots in force hold its paths."""
    return all(guard.root_of(path) is not None for path in (record.path, record.source) if path is not None)


def status_of(record: Record) -> str:
    if record.undone_by is not None:
        return "undone"
    return "interrupted" if record.status == "pending" else "done"


def list_changes(journal: Journal, guard: PathGuard, *, limit: int, before_id: int | None) -> ChangeList:
    shown: list[ChangeItem] = []
    more = False
    for record in journal.summaries(before_id=before_id):
        if not visible(guard, record):
            continue
        if len(shown) == limit:
            more = True
            break
        shown.append(
            ChangeItem(
                id=record.id,
                time=iso(record.time),
                tool=record.tool,
                path=record.path,
                source=record.source,
                size_bytes=record.size,
                status=status_of(record),
                undoes=record.undoes,
                undone_by=record.undone_by,
                note=record.note,
            )
        )
    count, size = journal.totals()
    return ChangeList(
        changes=shown,
        next_before_id=shown[-1].id if more and shown else None,
        journal_changes=count,
        journal_bytes=size,
        max_total_bytes=journal.limits.max_total_bytes,
    )


# -- undoing ------------------------------------------------------------------------------------------------------


@dataclass
class Restore:
    """Put `target` back at `path`, where the change left `left` (None: not known, the change was interrupted)."""

    path: Path
    left: State | None
    target: State
    noop: bool = False
    forced: bool = False

    @property
    def created_directory(self) -> bool:
        """The change created this directory: it is removed only when empty."""
        return (
            self.target.kind == "absent"
            and self.left is not None
            and self.left.kind == "directory"
            and (self.left.entries is None)
        )


@dataclass
class MoveBack:
    """Move the entry the change moved to `moved_to` back to `origin`."""

    moved_to: Path
    origin: Path
    kind: str
    identity: tuple[int, int]  # where it came from
    moved_as: tuple[int, int] | None  # what it became (None: not known)
    content: State | None = None  # a file's content or a link's target, when kept
    noop: bool = False
    clear_origin: bool = False  # force: what took the origin since is kept, then removed


Step = Restore | MoveBack


@dataclass
class UndoAction:
    path: str
    action: str


@dataclass
class UndoOutcome:
    undone_id: int
    undone_tool: str
    change_id: int | None
    actions: list[UndoAction]
    forced: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    message: str = ""


def undo_change(journal: Journal, guard: PathGuard, change_id: int | None, *, force: bool) -> UndoOutcome:
    with journal.change("undo_file_change", guard, hint=UNDO_HINT) as change:
        record = _chosen(journal, guard, change_id)
        steps = _plan(journal, guard, record, force=force)
        change.undoes = record.id
        _declare(change, steps)
        actions: list[UndoAction] = []
        kept: list[str] = []
        with change.applying():
            for step in steps:
                _run(journal, guard, step, actions, kept)
        message = f"undid change #{record.id} ({record.tool})"
        if change.id is None and record.status != "pending":
            raise ToolFailure(
                ErrorCode.VALIDATION_FAILED,
                f"nothing of change #{record.id} ({record.tool}) was undone: "
                + "; ".join(kept or ["every path holds what was there before it already"])
                + ". Empty or delete those directories first (delete_path), or leave them.",
            )
        if change.id is None and record.status == "pending":
            journal.forget(record.id)  # an interrupted change that never happened: nothing to keep
            message = (
                f"change #{record.id} ({record.tool}) was interrupted before it changed anything; its record is removed"
            )
        elif change.id is not None:
            message += f"; undo it in turn with change_id={change.id}"
        return UndoOutcome(
            undone_id=record.id,
            undone_tool=record.tool,
            change_id=change.id,
            actions=actions,
            forced=[guard.relative(_main(step)) for step in steps if _forced(step)],
            kept=kept,
            message=message,
        )


def _chosen(journal: Journal, guard: PathGuard, change_id: int | None) -> Record:
    if change_id is None:
        for summary in journal.summaries():
            if summary.undoes is None and summary.undone_by is None and visible(guard, summary):
                change_id = summary.id
                break
        else:
            raise not_found(
                "there is no change left to undo in the roots in force (list_file_changes shows the journal; an "
                "undo is redone by undoing it with its change_id)."
            )
    record = journal.record(change_id)
    if record is None:
        raise not_found(
            f"change #{change_id} is not in the undo journal (it never existed, or it was dropped as the journal "
            "keeps the newest changes within its limits); list_file_changes shows what is kept."
        )
    if not visible(guard, record):
        raise ToolFailure(
            ErrorCode.PERMISSION_DENIED,
            f"change #{change_id} touched paths outside the allowed roots in force; it cannot be undone from here.",
        )
    if record.undone_by is not None:
        raise ToolFailure(
            ErrorCode.VALIDATION_FAILED,
            f"change #{change_id} was undone already (by change #{record.undone_by}); to make it again, undo "
            f"#{record.undone_by}.",
        )
    return record


def _steps(record: Record) -> list[Step]:
    steps: list[Step] = []
    for operation in reversed(record.operations):
        if isinstance(operation, Rename):
            back = MoveBack(operation.destination, operation.source, operation.kind, operation.identity, None)
            back.moved_as, back.content = operation.moved_as, operation.content
            steps.append(back)
        else:
            steps.append(Restore(operation.path, operation.after, operation.before))
    return steps


def _plan(journal: Journal, guard: PathGuard, record: Record, *, force: bool) -> list[Step]:
    """The steps of the undo, each checked against the file system; refuses (VALIDATION_FAILED) on changes
    since, unless `force`."""
    steps = _steps(record)
    touched: list[Path] = []
    conflicts: list[str] = []
    for step in steps:
        paths = [step.path] if isinstance(step, Restore) else [step.moved_to, step.origin]
        for path in paths:
            checked_path(guard, path)
        if any(_related(path, other) for path in paths for other in touched):
            touched += paths  # an earlier step of this undo decides what is there by then
            continue
        touched += paths
        problem = _check(guard, step, journal.limits, record)
        if problem:
            conflicts.append(problem)
            _mark_forced(step)
    if conflicts and not force:
        shown = conflicts[:MAX_CONFLICTS_SHOWN]
        more = f" (and {len(conflicts) - len(shown)} more)" if len(conflicts) > len(shown) else ""
        raise ToolFailure(
            ErrorCode.VALIDATION_FAILED,
            f"change #{record.id} ({record.tool}) cannot be undone as it is: "
            + "; ".join(shown)
            + more
            + ". Nothing was changed. Pass force=true to undo it anyway (what stands there now is kept in the undo's "
            "own record, so the undo can itself be undone), or look first (read_file, list_file_changes).",
        )
    if all(step.noop for step in steps):
        if record.status == "pending":
            return steps
        raise ToolFailure(
            ErrorCode.VALIDATION_FAILED,
            f"change #{record.id} ({record.tool}) is undone already on disk: every path holds what was there "
            "before it. Nothing was changed.",
        )
    return steps


def _check(guard: PathGuard, step: Step, limits: Limits, record: Record) -> str | None:
    """What stands in the way of `step`, as a sentence; None when nothing does."""
    if isinstance(step, Restore):
        return _check_restore(guard, step, limits, record)
    return _check_move_back(guard, step, limits, record)


def _holds(guard: PathGuard, path: Path, state: State, limits: Limits) -> tuple[bool, State | None]:
    return matches(guard, path, state, limits.budget(keep=False))


def _check_restore(guard: PathGuard, step: Restore, limits: Limits, record: Record) -> str | None:
    """A path to put back: it must hold what the change left (or what was there before: nothing to do)."""
    shown = guard.relative(step.path)
    if step.left is None:  # interrupted: did the change happen at all?
        back, _ = _holds(guard, step.path, step.target, limits)
        if back:
            step.noop = True
            return None
        return f"{shown!r}: {record.tool} was interrupted and what it left is not known"
    same, found = _holds(guard, step.path, step.left, limits)
    if same:
        return None
    back, _ = _holds(guard, step.path, step.target, limits)
    if back:
        step.noop = True  # it holds what was there before the change already
        return None
    if step.created_directory and found is not None and found.kind == "directory":
        return None
    now = found.describe() if found is not None else "something too large to compare"
    return f"{shown!r} changed since: {record.tool} left {step.left.describe()}, it now holds {now}"


def _check_move_back(guard: PathGuard, step: MoveBack, limits: Limits, record: Record) -> str | None:
    """An entry to move back: it must be the one moved there, and where it came from must be free."""
    shown_to, shown_origin = guard.relative(step.moved_to), guard.relative(step.origin)
    here = identity_of(step.moved_to)
    if step.moved_as is None and identity_of(step.origin) == step.identity:  # interrupted before the move
        step.noop = True
        return None
    if here is None:
        raise ToolFailure(
            ErrorCode.NOT_FOUND,
            f"{shown_to!r}, where change #{record.id} moved {shown_origin!r}, is gone; there is nothing to move "
            "back. Nothing was changed.",
        )
    problems = []
    if step.moved_as is None:
        problems.append(f"{shown_to!r}: {record.tool} was interrupted and what it left is not known")
    elif step.content is not None:
        same, found = _holds(guard, step.moved_to, step.content, limits)
        if not same:
            now = found.describe() if found is not None else "something too large to compare"
            problems.append(
                f"{shown_to!r} changed since: {record.tool} moved {step.content.describe()} there, it now holds {now}"
            )
    elif here != step.moved_as:
        problems.append(f"{shown_to!r} is another entry now than the one {record.tool} moved there")
    if os.path.lexists(step.origin):
        step.clear_origin = True
        problems.append(f"{shown_origin!r}, where it came from, is taken now")
    return "; ".join(problems) or None


def _mark_forced(step: Step) -> None:
    if isinstance(step, Restore):
        step.forced = True


def _forced(step: Step) -> bool:
    return step.forced if isinstance(step, Restore) else step.clear_origin


def _main(step: Step) -> Path:
    return step.path if isinstance(step, Restore) else step.origin


def _related(a: Path, b: Path) -> bool:
    return is_inside(os.fspath(a), os.fspath(b)) or is_inside(os.fspath(b), os.fspath(a))


def _declare(change: Change, steps: list[Step]) -> None:
    """Tell the undo's own record what each step replaces (kept before anything changes)."""
    vacated: set[Path] = set()
    for step in steps:
        if step.noop:
            continue
        if isinstance(step, MoveBack):
            if step.clear_origin:
                change.replace(step.origin, after=ABSENT, deep=True)
            change.rename(step.moved_to, step.origin, step.kind)
            vacated.add(step.moved_to)
        elif step.path in vacated:
            change.replace(step.path, before=ABSENT)
        else:
            change.replace(step.path, deep=not step.created_directory)


def _run(journal: Journal, guard: PathGuard, step: Step, actions: list[UndoAction], kept: list[str]) -> None:
    if step.noop:
        return
    if isinstance(step, MoveBack):
        moved_to, origin = checked_path(guard, step.moved_to), checked_path(guard, step.origin)
        if step.clear_origin:
            remove(guard, origin)
        rename_entry(guard, moved_to, origin, replace=False)  # the origin is free (cleared first with force)
        actions.append(UndoAction(str(origin), f"moved back from {guard.relative(moved_to)}"))
        return
    path = checked_path(guard, step.path)
    target = step.target
    if target.kind == "absent":
        if remove(guard, path, only_if_empty=step.created_directory):
            actions.append(UndoAction(str(path), "deleted"))
        else:
            kept.append(
                f"{guard.relative(path)}: a directory the change created, kept as it is no longer an empty directory"
            )
        return
    if not (target.kind == "file" and os.path.isfile(path) and not os.path.islink(path)):
        remove(guard, path)  # a file is replaced atomically; anything else goes first
    write_state(guard, path, target, journal.blob)
    actions.append(UndoAction(str(path), "created" if step.left == ABSENT else "restored"))
