"""Pages of long listings: the first page a model can read, the total, and an opaque cursor for the next.

A cursor carries the offset of the next page and a fingerprint of the request it belongs to (the tool and
every argument but the cursor and the page size), so a cursor given with other arguments is refused rather
than silently paging through a different listing. Listings are recomputed per page: a tree that changed
between two pages shows its new state from that page on.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from mcp_sections.shared.ground.errors import invalid_input

T = TypeVar("T")


def fingerprint(tool: str, arguments: Mapping[str, Any]) -> str:
    """What identifies a listing: the tool and its arguments, cursor and page size aside."""
    relevant = {key: value for key, value in arguments.items() if key not in ("cursor", "limit")}
    canonical = json.dumps([tool, relevant], sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def encode_cursor(offset: int, print_: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset, "f": print_}).encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None, print_: str) -> int:
    """The offset a cursor points at (0 without one); INVALID_INPUT for a foreign or damaged cursor."""
    if not cursor:
        return 0
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        offset, owner = int(data["o"]), str(data["f"])
    except (ValueError, KeyError, TypeError):
        raise invalid_input("cursor is not one this tool returned; omit it to start from the first page.") from None
    if owner != print_ or offset < 0:
        raise invalid_input(
            "cursor belongs to a listing with other arguments; repeat the call that returned it, changing only "
            "`cursor` (and `limit`), or omit it to start over."
        )
    return offset


def page(items: Sequence[T], cursor: str | None, limit: int, print_: str) -> tuple[list[T], str | None]:
    """The page of `items` the cursor points at, and the cursor of the next page (None on the last)."""
    offset = decode_cursor(cursor, print_)
    chunk = list(items[offset : offset + limit])
    following = offset + limit
    return chunk, (encode_cursor(following, print_) if following < len(items) else None)
