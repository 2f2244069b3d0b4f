"""A dev server that shell_ops publishes is readable by web_ops, over HTTP and in the browser, without editing the
config; nothing else on loopback becomes reachable (issue #38, design point 7).

shell_ops runs as its own process (the relay and its registry entries are the subject), its program in the real
sandbox; web_ops runs in memory on the same data directory. The registry (`shared.confinement.published_ports`) is the
only way web_ops learns that a loopback port is a published dev server: a port that is not published, a port whose dev
server stopped, a page of the web redirecting to the dev server, and a dev page reaching another loopback port are
refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from mcp import Client

from mcp_sections.shared.confinement.guards.urls import UrlGuard
from mcp_sections.shared.confinement.published_ports import PublishedPorts
from tests.dev_server import start_dev_server
from tests.http_stand_in import ScriptedHandler, serving
from tests.in_memory import section_in_memory
from tests.processes import free_port
from tests.stdio import call, fail, section_client
from tests.web_ops.site import Site, running_site

pytestmark = pytest.mark.anyio
HAVE_BWRAP = shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin") is not None
APP = """<!doctype html><html><head><title>Dev app</title></head><body><h1>Dev app</h1><p id="out">loading</p>
<img src="{canary}/pixel.png" alt="">
<script>
fetch("/data.json").then(r => r.json()).then(d => {{ document.getElementById("out").textContent = d.message; }});
fetch("{canary}/steal").catch(() => {{}});
</script></body></html>"""
MESSAGE = "rendered from the dev server's own data"
AWS_KEY_ID, AWS_SECRET = "AKIA" + "Z7QWERTYUIOPASDF", "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYzz9k2LmQpR"
TOKEN, GITHUB = "sk-live-" + "9f8e7d6c5b4a39281716abcdef", "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"


@pytest.fixture(scope="module")
def canary() -> Iterator[Site]:
    with running_site() as site:
        yield site


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, canary: Site) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("dev-servers")
    srv = base / "root" / "srv"
    srv.mkdir(parents=True)
    (srv / "index.html").write_text("<h1>Dev server</h1><p>served from inside the sandbox</p>\n")
    (srv / "app.html").write_text(APP.format(canary=canary.canary))
    (srv / "data.json").write_text(json.dumps({"message": MESSAGE}))
    credentials = f"[default]\naws_access_key_id = {AWS_KEY_ID}\naws_secret_access_key = {AWS_SECRET}\n"
    (srv / "notes-config.txt").write_text(credentials)
    (srv / "env.txt").write_text(f"API_TOKEN={TOKEN}\n")
    (srv / "settings.html").write_text(
        f"<title>Settings</title><p>token in use: {GITHUB}</p><a href='/cb?password=x&to={GITHUB}'>callback</a>"
    )
    return {"base": base, "root": base / "root", "data": base / "data"}


@pytest.fixture(scope="module")
async def shell(world: dict[str, Path]) -> AsyncIterator[Client]:
    if not HAVE_BWRAP:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")
    env = {"MCP_SECTIONS_DATA_DIR": str(world["data"]), "MCP_SECTIONS_WARM_UP": "0"}
    async with section_client("shell_ops", "--root", str(world["root"]), env=env) as client:
        yield client


@contextlib.asynccontextmanager
async def web_ops(world: dict[str, Path], **env: str) -> AsyncIterator[Client]:
    """web_ops in memory on shell_ops' data directory, with no allow-list: nothing on loopback is opened by config."""
    variables = {"MCP_SECTIONS_WEB_OPS_EMBEDDINGS": "false", "MCP_SECTIONS_WEB_OPS_TIMEOUT_SECONDS": "10", **env}
    async with section_in_memory("web_ops", "--data-dir", str(world["data"]), env=variables) as client:
        yield client


async def dev_server(shell: Client, port: int) -> str:
    return (await start_dev_server(shell, port))["process"]["process_id"]


@contextlib.contextmanager
def redirecting_to(location: str) -> Iterator[int]:
    """A site on 127.0.0.1 whose every page redirects to `location` (its port)."""

    class Redirect(ScriptedHandler):
        def do_GET(self) -> None:
            self.answer_bytes(302, b"", Location=location)

    with serving(Redirect) as port:
        yield port


async def test_a_published_dev_server_is_read_and_nothing_else_on_loopback(
    shell: Client, world: dict[str, Path], canary: Site
) -> None:
    port = free_port()
    process_id = await dev_server(shell, port)
    try:
        async with web_ops(world) as web:
            for host in ("127.0.0.1", "localhost"):
                page = await call(web, "fetch_web_page", url=f"http://{host}:{port}/index.html", render="http")
                assert "served from inside the sandbox" in page["text"], page
            rendered = await call(
                web, "fetch_web_page", url=f"http://127.0.0.1:{port}/app.html", render="browser", wait_for="networkidle"
            )
            assert rendered["rendered_with"] == "browser" and MESSAGE in rendered["text"], rendered
            blocked = " ".join(rendered["blocked_requests"])
            assert f"127.0.0.1:{canary.canary_port}" in blocked, rendered["blocked_requests"]
            assert canary.canary_hits == []  # another loopback port, even from the dev server's own page
            message = await fail(
                web, "fetch_web_page", "PERMISSION_DENIED", url=f"http://127.0.0.1:{canary.canary_port}/", render="http"
            )
            assert "start_process" in message and f"published now: {port}" in message, message
            await fail(web, "fetch_web_page", "PERMISSION_DENIED", url=f"http://[::1]:{port}/index.html")
            await fail(web, "fetch_web_page", "PERMISSION_DENIED", url=f"http://127.0.0.2:{port}/index.html")
            log = await call(shell, "read_process_output", process_id=process_id, wait_seconds=2)
            assert "GET /index.html" in log["output"] and "GET /data.json" in log["output"]
    finally:
        stopped = await call(shell, "stop_process", process_id=process_id, signal="SIGKILL")
    assert stopped["process"]["state"] == "stopped"
    async with web_ops(world) as web:  # the same URL, once its dev server stopped: refused, not served from memory
        message = await fail(web, "fetch_web_page", "PERMISSION_DENIED", url=f"http://127.0.0.1:{port}/index.html")
    assert "none is published now" in message, message
    assert not list((world["data"] / "published_ports").glob("*.json"))


async def test_a_dev_servers_pages_are_masked_as_the_files_they_serve(shell: Client, world: dict[str, Path]) -> None:
    """A dev server serves the project's files: what file_ops would mask in them does not come back whole through
    web_ops, over HTTP or in the browser (an outside tester's finding: a token in a served text file came back)."""
    port = free_port()
    process_id = await dev_server(shell, port)
    try:
        async with web_ops(world) as web:
            pages = [
                await call(web, "fetch_web_page", url=f"http://127.0.0.1:{port}/notes-config.txt", render="http"),
                await call(web, "fetch_web_page", url=f"http://localhost:{port}/env.txt", render="http"),
                await call(web, "fetch_web_page", url=f"http://127.0.0.1:{port}/settings.html", render="browser"),
            ]
    finally:
        await call(shell, "stop_process", process_id=process_id, signal="SIGKILL")
    everything = json.dumps(pages)
    for secret in (AWS_KEY_ID, AWS_SECRET, TOKEN, GITHUB):
        assert secret not in everything, secret
    assert "aws_secret_access_key = ***MASKED***" in pages[0]["text"] and "API_TOKEN=***MASKED***" in pages[1]["text"]
    assert all(any("masked" in note for note in page["notes"]) for page in pages), [p["notes"] for p in pages]


async def test_a_page_of_the_web_cannot_lead_to_a_dev_server(shell: Client, world: dict[str, Path]) -> None:
    """A site web_ops may read (allow-listed here) that redirects to a published dev server is refused there."""
    port = free_port()
    process_id = await dev_server(shell, port)
    try:
        with redirecting_to(f"http://127.0.0.1:{port}/index.html") as site:
            async with web_ops(world, MCP_SECTIONS_WEB_OPS_ALLOW=f"127.0.0.1:{site}") as web:
                message = await fail(web, "fetch_web_page", "PERMISSION_DENIED", url=f"http://127.0.0.1:{site}/")
        assert "loopback" in message, message
    finally:
        await call(shell, "stop_process", process_id=process_id, signal="SIGKILL")


def test_only_a_true_entry_publishes_a_port(tmp_path: Path) -> None:
    """An entry is believed only while its socket listens there, in a file of this user nobody else may write."""
    registry = PublishedPorts(tmp_path)
    guard = UrlGuard(published=registry)
    with socket.socket() as listener, socket.socket() as other:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        other.bind(("127.0.0.1", 0))
        other.listen()
        port, inode = listener.getsockname()[1], os.fstat(listener.fileno()).st_ino
        assert not registry.live(port)
        registry.record(port, os.fstat(other.fileno()).st_ino)  # another socket's inode: not what listens there
        assert not registry.live(port)
        registry.record(port, inode)
        assert registry.live(port) and registry.ports() == [port]
        assert guard.check(f"http://localhost:{port}/").addresses == ("127.0.0.1",)
        with pytest.raises(Exception, match="loopback address"):
            UrlGuard().check(f"http://127.0.0.1:{port}/")  # the web's guard: never a dev server
        with pytest.raises(Exception, match="not a published dev server"):
            guard.check("http://93.184.215.14/")  # a dev server's guard: never the web
        (tmp_path / "published_ports" / f"{port}.json").chmod(0o666)
        assert not registry.live(port)  # writable by others: not believed
        (tmp_path / "published_ports" / f"{port}.json").chmod(0o600)
        assert registry.live(port)
        registry.remove(port, inode)
        assert not registry.live(port)
