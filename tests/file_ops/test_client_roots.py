"""Client MCP roots (the server in memory): the intersection policy, and re-reading after roots/list_changed."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_types import ListRootsResult, Root

from tests.in_memory import section_in_memory
from tests.stdio import data_of, error_of

# the server asks for roots (deprecated in the 2026-07-28 protocol, in use before it): in memory, its warning is ours
pytestmark = pytest.mark.filterwarnings("ignore:The roots capability is deprecated")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("client-roots").resolve()
    for name in ("allowed/project", "allowed/other", "elsewhere"):
        (base / name).mkdir(parents=True)
        (base / name / "file.txt").write_text(f"{name}\n")
    (base / "absent-config.toml").write_text("")
    return base


class Roots:
    """What the test client answers to roots/list, and how many times it was asked."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self.asked = 0

    async def __call__(self, context: Any) -> ListRootsResult:
        self.asked += 1
        return ListRootsResult(roots=[Root(uri=uri) for uri in self.uris])  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def roots() -> Roots:
    return Roots()


@pytest.fixture(scope="module")
async def client(tree: Path, roots: Roots) -> AsyncIterator[Client]:
    env = {"MCP_SECTIONS_CONFIG": str(tree / "absent-config.toml"), "MCP_SECTIONS_ROOTS": ""}
    roots.uris = [(tree / "allowed" / "project").as_uri(), (tree / "elsewhere").as_uri()]
    # roots/list is a server-to-client request: it needs the initialize-handshake (legacy) protocol
    arguments = ["--root", str(tree / "allowed")]
    async with section_in_memory(
        "file_ops", *arguments, env=env, mode="legacy", list_roots_callback=roots
    ) as connected:
        yield connected


@pytest.mark.anyio
async def test_client_roots_narrow_the_configured_roots(client: Client, tree: Path, roots: Roots) -> None:
    data = data_of(await client.call_tool("list_allowed_roots", {}))
    assert data["source"] == "intersection"
    assert data["roots"] == [str(tree / "allowed" / "project")]  # "elsewhere" is outside the configured root
    assert data["configured_roots"] == [str(tree / "allowed")]
    assert data_of(await client.call_tool("read_file", {"path": "file.txt"}))["content"] == "allowed/project\n"
    for path in (tree / "allowed" / "other" / "file.txt", tree / "elsewhere" / "file.txt"):
        code, _ = error_of(await client.call_tool("read_file", {"path": str(path)}))
        assert code == "PERMISSION_DENIED"


@pytest.mark.anyio
async def test_roots_are_cached_and_reread_after_list_changed(client: Client, tree: Path, roots: Roots) -> None:
    await client.call_tool("list_allowed_roots", {})
    asked = roots.asked
    await client.call_tool("list_allowed_roots", {})
    assert roots.asked == asked  # cached per connection
    roots.uris = [(tree / "allowed" / "other").as_uri()]
    await changed(client)
    data = await roots_in_force(client, [str(tree / "allowed" / "other")])
    assert data["roots"] == [str(tree / "allowed" / "other")]
    assert roots.asked == asked + 1
    roots.uris = [(tree / "elsewhere").as_uri()]
    await changed(client)
    assert (await roots_in_force(client, []))["roots"] == []
    code, message = error_of(await client.call_tool("read_file", {"path": "file.txt"}))
    assert code == "PERMISSION_DENIED" and "do not overlap" in message


async def changed(client: Client) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # roots are deprecated in the 2026-07-28 protocol, still in use before it
        await client.send_roots_list_changed()


async def roots_in_force(client: Client, expected: list[str]) -> dict[str, Any]:
    """The notification is handled concurrently with the next request: allow it a moment to land."""
    for _ in range(50):
        data = data_of(await client.call_tool("list_allowed_roots", {}))
        if data["roots"] == expected:
            break
        await anyio.sleep(0.02)
    return data
