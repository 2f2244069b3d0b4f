"""Waiting in a test for something to happen: poll a condition at a short interval up to a generous deadline, instead
of sleeping a fixed time that is either too long on an idle machine or too short on a loaded one."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import anyio


async def eventually(predicate: Callable[[], Any], timeout: float = 30, interval: float = 0.02) -> Any:
    """Poll `predicate` (sync, or async) until it returns something true, and return that; TimeoutError after
    `timeout` seconds."""
    with anyio.fail_after(timeout):
        while True:
            value = predicate()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
            await anyio.sleep(interval)


async def cancelled_once(call: Callable[[], Awaitable[Any]], ready: Callable[[], Any], timeout: float = 30) -> bool:
    """Start `call`, wait until `ready()` holds, then cancel the call as a client cancels its request; whether the
    call was still running then (it had not returned)."""
    returned: list[Any] = []

    async def run() -> None:
        returned.append(await call())

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await eventually(ready, timeout)
        group.cancel_scope.cancel()
    return not returned
