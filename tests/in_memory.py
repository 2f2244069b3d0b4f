"""A section or the gateway in this process, made from the words of `mcp-sections serve|gateway …`.

`section_in_memory("file_ops", "--root", root)` is `tests.stdio.section_client` without the process: the CLI's own
parser and settings, the server built as `serve` builds it (`servers.cli.section_server`), the official client on
the SDK's in-memory transport. A call costs milliseconds instead of a process start (~1 s, several under load).
Use it for what a section does; keep `section_client` where the process is the subject (stdio, crashes, kill -9,
start-up, several processes on one database) and for each section's stdio smoke test.

`env` is set in this process's environment (and `cwd` is the working directory) for as long as the client is open:
the settings read it when the server is built, and the sections at run time, as a served section would. The state a
process keeps for its whole life starts afresh with each server, as in a new process: the secret values masking
has learnt (`shared.confinement.secrets.values.KNOWN`), so that what one test's server learnt masks nothing in
another's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_sections.servers.cli import build_parser, gateway_server, section_server, settings_from
from mcp_sections.shared.confinement.secrets.values import KNOWN
from tests.stdio import HOST_ENVIRONMENT, REPO


@contextmanager
def environment(env: dict[str, str] | None, cwd: Path | None) -> Iterator[None]:
    """`env` set and `cwd` the working directory (both restored on exit), and no secret value known yet."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in (env or {}).items():
            patch.setenv(key, value)
        if cwd is not None:
            patch.chdir(cwd)
        KNOWN.__init__()  # type: ignore[misc]  # forgotten, and the environment read again, as in a new process
        yield


@asynccontextmanager
async def section_in_memory(
    section: str, *extra_args: str, env: dict[str, str] | None = None, cwd: Path | None = None, **client_options: Any
) -> AsyncIterator[Client]:
    """`mcp-sections serve <section> <extra_args>`, in memory, connected (`client_options` go to `mcp.Client`)."""
    with environment(env, cwd):
        args = build_parser().parse_args(["serve", section, *extra_args])
        server = section_server(args, settings_from(args))
        async with Client(server, read_timeout_seconds=120, **client_options) as client:
            yield client


@asynccontextmanager
async def gateway_in_memory(
    *args: str,
    env: dict[str, str] | None = None,
    mode: str = "legacy",
    cwd: Path | None = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """`mcp-sections gateway <args>` in memory, as `tests.gateway.helpers.gateway_client` starts it (no config file
    unless `--config`, the repository importable by the third-party sections it starts); its sections are started
    as the gateway starts them (subprocesses, or in process with `--in-process`)."""
    environment_of = {**HOST_ENVIRONMENT, **(env or {})}
    with environment(environment_of, cwd or REPO):
        parsed = build_parser().parse_args(["gateway", *args])
        server, gateway = gateway_server(parsed, settings_from(parsed))
        # type: ignore[arg-type]
        async with Client(server, mode=mode, read_timeout_seconds=120, **client_options) as client:
            client.gateway = gateway  # type: ignore[attr-defined]
            yield client
