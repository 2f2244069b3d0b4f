"""Start `mcp-sections serve orchestration` (in memory, or over stdio) with a scripted model and a scriptable user."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp_types import ElicitResult

from tests.in_memory import section_in_memory
from tests.stdio import HOST_ENVIRONMENT, server_parameters


class User:
    """The human behind the client's elicitation callback: answers from a queue, records every question."""

    def __init__(self) -> None:
        self.replies: list[tuple[str, Any]] = []
        self.questions: list[Any] = []

    def will(self, action: str, content: Any = None) -> None:
        self.replies.append((action, content))

    async def __call__(self, context: Any, params: Any) -> ElicitResult:
        self.questions.append(params)
        action, content = self.replies.pop(0) if self.replies else ("cancel", None)
        if action == "sleep":  # answer too late
            seconds, then = content
            await anyio.sleep(seconds)
            return ElicitResult(action="accept", content=then)
        if action == "accept":
            return ElicitResult(action="accept", content=content)
        return ElicitResult(action=action)  # type: ignore[arg-type]


@asynccontextmanager
async def orchestration_client(
    config: Path,
    workdir: Path,
    *,
    mode: str = "legacy",
    user: User | None = None,
    env: dict[str, str] | None = None,
    stdio: bool = False,
) -> AsyncIterator[Client]:
    """`mcp-sections serve orchestration` in memory (over stdio, a process, with `stdio`); its sections are
    processes either way."""
    environment = {**HOST_ENVIRONMENT, **(env or {})}
    args = ["--config", str(config), "--data-dir", str(workdir / "data")]
    if not stdio:
        async with section_in_memory(
            "orchestration", *args, env=environment, cwd=workdir, mode=mode, elicitation_callback=user
        ) as client:
            yield client
        return
    parameters = server_parameters(["serve", "orchestration", *args], env=environment, cwd=workdir)
    async with Client(
        parameters,  # type: ignore[arg-type]
        mode=mode,  # type: ignore[arg-type]
        read_timeout_seconds=120,
        elicitation_callback=user,
    ) as client:
        yield client
