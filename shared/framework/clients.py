"""Who a request comes from: the owner of what a call leaves behind (a task, a resource link).

An owner is a user and a client program, never a connection: the bearer token the request presented (a digest of it;
"local" without one, over stdio or on a loopback server without a token) and the name and version the client declares
(`clientInfo`, on both protocol wires). A client that reconnects (a new HTTP session, a restarted app) is the same
owner. What keeps two owners apart: another user presents another token; another program of the same user declares
another name or version. Two running copies of one program of one user are one owner, as they share everything else
that user's token reaches; on a loopback server without a token every local process is trusted alike (it may call
every tool), so a declared name is no secret there.
"""

from __future__ import annotations

import hashlib
from typing import Any


def owner_of(ctx: Any) -> str:
    """The owner of a request (see the module docstring), from the SDK's request context."""
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    presented = headers.get("authorization") if headers is not None else None
    user = "token:" + hashlib.sha256(presented.encode()).hexdigest()[:24] if presented else "local"
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    client = f"{info.name}/{info.version}" if info is not None else "anonymous"
    return f"{user}|client:{client}"
