"""Waiting in a test for something to happen: poll a condition at a short interval up to a generous deadline, instead
of sleeping a fixed time that is either too long on an idle machine or too short on a loaded one."""

from __future__ import annotations

import inspect
from collections.abc import Callable
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
