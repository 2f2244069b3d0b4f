"""`/health` on every Streamable HTTP server and the gateway's `/status` page, through real server processes.

The page is driven in Chromium (Playwright): the sign-in form, the content (sections, recent calls, the sub-agent
tree, the brain's projects), a refresh without reload, phone width and the keyboard; its screenshots are kept in
the test's temporary directory. Its HTTP answers are checked for the token rules and the security headers.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.gateway.helpers import REPO, write_config
from tests.gateway.scripted_model import Reply, Request, ScriptedModel, model_table
from tests.processes import serving_over_http
from tests.stdio import NO_WARM_UP, cli_command, data_of

TOKEN = "status-page-token-0123456789abcdef"
STATUS_SCREENSHOT = "status.png"


def tree(request: Request) -> Reply:
    """A sub-agent adds two numbers, then (at depth 1) delegates once more."""
    if request.turn == 0:
        return Reply(tool_calls=[("calculator_binary", {"operation": "add", "a": 20, "b": 22})])
    if request.turn == 1 and request.depth == 1:
        return Reply(tool_calls=[("plan_actions", {"goal": "[script:tree] check it", "sections": ["calculator"]})])
    return Reply(text=f"42 at depth {request.depth} [calculator_binary].")


@dataclass
class Gateway:
    port: int
    data: Path
    process: subprocess.Popen[bytes]
    brain: bool = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def _http_server(args: list[str], env: dict[str, str] | None = None) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """`mcp-sections <args>` over HTTP with no config file but `env`'s, from the checkout: its port and process."""
    with serving_over_http(args, {"MCP_SECTIONS_CONFIG": os.devnull, **(env or {})}, cwd=REPO) as served:
        yield served


def _brain(data: Path, workspace: Path) -> bool:
    """A small project in the SQLite brain, ingested without embeddings (its nodes wait for vectors); False without
    the `rag` extra (the page then says there is no brain)."""
    try:
        import tree_sitter  # noqa: F401
    except ImportError:
        return False
    from mcp_sections.servers.rag_ops.brain import Brain
    from mcp_sections.shared.brain.sqlite_backend import SQLiteBrainStore

    project = workspace / "shop"
    project.mkdir(parents=True)
    (project / "cart.py").write_text("def total(items):\n    return sum(items)\n", encoding="utf-8")
    (project / "README.md").write_text("# Shop\n\nA cart that adds prices.\n", encoding="utf-8")
    brain = Brain(SQLiteBrainStore(data / "brain.sqlite3"), [workspace], background_embeddings=False)
    try:
        brain.ingest_directory(str(project))
    finally:
        brain.close()
    return True


async def _use(gateway: Gateway) -> None:
    """Calls for the page to show: a forwarded call, a failing one, and a sub-agent tree two levels deep."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=120)) as http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=http), mode="legacy") as client,  # type: ignore[arg-type]
    ):
        add = {"section": "calculator", "tool": "calculator_binary", "arguments": {"operation": "add", "a": 1, "b": 2}}
        data_of(await client.call_tool("call_section_tool", add))
        bad = {
            "section": "calculator",
            "tool": "calculator_binary",
            "arguments": {"operation": "divide", "a": 1, "b": 0},
        }
        assert (await client.call_tool("call_section_tool", bad)).is_error
        planned = await client.call_tool("plan_actions", {"goal": "[script:tree] add", "sections": ["calculator"]})
        assert data_of(planned)["success"]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    base = tmp_path_factory.mktemp("status")
    (base / "token").write_text(TOKEN + "\n", encoding="utf-8")
    data = base / "data"
    data.mkdir()
    brain = _brain(data, base / "workspace")
    with ScriptedModel({"tree": tree}) as model:
        config = write_config(
            base / "config.toml", "[gateway]\ndisabled_tools = ['todo_delete']\n", model_table(model.base_url)
        )
        args = ["gateway", "--config", str(config), "--data-dir", str(data), "--auth-token-file", str(base / "token")]
        with _http_server(args, {"SCRIPTED_MODEL_KEY": "k", "MCP_SECTIONS_CONFIG": str(config)}) as (port, process):
            running = Gateway(port, data, process, brain)
            anyio.run(_use, running)
            yield running


def _request(port: int, method: str, path: str, headers: dict[str, str] | None = None, body: str = "") -> Any:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    connection.request(method, path, body=body or None, headers=headers or {})
    response = connection.getresponse()
    response.body = response.read()
    return response


# -- /health ------------------------------------------------------------------------------------------------


def test_health_answers_without_the_token_and_tells_nothing_else(gateway: Gateway) -> None:
    answer = _request(gateway.port, "GET", "/health")
    assert answer.status == 200 and json.loads(answer.body) == {"status": "ok"}
    names = {name.lower() for name, _ in answer.getheaders()}
    assert "server" not in names, "no server header (no name, no version)"
    assert names <= {"content-type", "cache-control", "x-content-type-options", "content-length", "date"}
    assert _request(gateway.port, "HEAD", "/health").status == 200
    assert _request(gateway.port, "POST", "/health").status == 405
    assert _request(gateway.port, "GET", "/mcp").status == 401, "the MCP endpoint still needs the token"


def test_every_http_section_answers_health_and_the_probe_uses_it(tmp_path: Path) -> None:
    from mcp_sections.servers.healthcheck import check, probe_url

    with _http_server(["serve", "calculator", "--data-dir", str(tmp_path)]) as (port, _):
        answer = _request(port, "GET", "/health")
        assert answer.status == 200 and answer.body == b'{"status": "ok"}'
        url = probe_url(["mcp-sections", "serve", "calculator", "--transport", "http", "--port", str(port)])
        assert url == f"http://127.0.0.1:{port}/health" and check(url)
    assert not check(url), "nothing listens any more: unhealthy"
    assert probe_url(["mcp-sections", "serve", "calculator"]) is None  # stdio: nothing to probe


def test_a_taken_port_fails_without_saying_it_serves(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = [*cli_command(), "serve", "calculator", "--data-dir", str(tmp_path)]
        command += ["--transport", "http", "--port", str(port)]
        environment = {**os.environ, **NO_WARM_UP, "MCP_SECTIONS_CONFIG": os.devnull}
        done = subprocess.run(command, env=environment, cwd=REPO, capture_output=True, timeout=60)
    assert done.returncode != 0
    text = done.stderr.decode(errors="replace")
    assert "address already in use" in text and "serving" not in text


# -- /status over HTTP ------------------------------------------------------------------------------------------


def test_status_needs_the_token_and_sends_strict_security_headers(gateway: Gateway) -> None:
    port = gateway.port
    anonymous = _request(port, "GET", "/status")
    assert anonymous.status == 401 and b"name=token type=password" in anonymous.body
    assert b"calculator" not in anonymous.body, "nothing of the gateway before sign-in"
    assert _request(port, "GET", "/status/live").status == 401
    assert _request(port, "GET", "/status", {"Authorization": "Bearer wrong-token-wrong-token"}).status == 401

    page = _request(port, "GET", "/status", {"Authorization": f"Bearer {TOKEN}"})
    assert page.status == 200 and page.getheader("content-type").startswith("text/html")
    csp = page.getheader("content-security-policy")
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "style-src 'self'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp and "frame-ancestors 'none'" in csp
    assert page.getheader("x-frame-options") == "DENY" and page.getheader("x-content-type-options") == "nosniff"
    assert page.getheader("cache-control") == "no-store" and page.getheader("referrer-policy") == "same-origin"
    html = page.body.decode()
    assert "http://" not in html and "https://" not in html and "<script>" not in html and "style=" not in html
    for asset in ("/status/status.css", "/status/status.js"):
        assert f'"{asset}"' in html and _request(port, "GET", asset).status == 200
    # DNS rebinding: another Host is refused as on /mcp
    assert _request(port, "GET", "/status", {"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"}).status == 421


def test_sign_in_sets_a_strict_http_only_cookie_for_the_page_only(gateway: Gateway) -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    wrong = _request(gateway.port, "POST", "/status/sign-in", form, "token=not-the-token-at-all")
    assert wrong.status == 401 and b"not the gateway&#x27;s token" in wrong.body and not wrong.getheader("set-cookie")
    right = _request(gateway.port, "POST", "/status/sign-in", form, f"token={TOKEN}")
    assert right.status == 303 and right.getheader("location") == "/status"
    cookie = right.getheader("set-cookie")
    attributes = {part.strip().split("=")[0].lower(): part for part in cookie.split(";")}
    assert "httponly" in attributes and attributes["samesite"].split("=")[1].lower() == "strict"
    assert attributes["path"].split("=")[1] == "/status"
    assert TOKEN not in cookie, "the cookie is a session id, never the token"
    session = cookie.split(";")[0]
    assert _request(gateway.port, "GET", "/status", {"Cookie": session}).status == 200
    assert _request(gateway.port, "GET", "/mcp", {"Cookie": session}).status == 401, "the cookie opens the page only"
    out = _request(gateway.port, "POST", "/status/sign-out", {"Cookie": session})
    assert out.status == 303 and _request(gateway.port, "GET", "/status", {"Cookie": session}).status == 401


def test_the_page_shows_sections_calls_agents_and_the_brain(gateway: Gateway) -> None:
    html = _request(gateway.port, "GET", "/status/live", {"Authorization": f"Bearer {TOKEN}"}).body.decode()
    assert "calculator" in html and "running" in html
    assert "disabled: todo_delete" in html  # the filters in force
    assert "call_section_tool" in html and "calculator_binary" in html and "state failed" in html
    assert "<ul>" in html and "depth 2" in html and "completed" in html
    assert ("shop" in html and "Pending embeddings" in html) if gateway.brain else "no SQLite brain" in html
    assert "sha256" not in html and "divide" not in html, "no argument, not even its digest"


# -- in Chromium ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install 'mcp-sections[web]'")
    from mcp_sections.servers.web_ops.browser import find_chromium

    with sync_api.sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=find_chromium(None), args=["--no-sandbox"])
        except Exception as exc:  # no Chromium on this machine
            pytest.skip(f"Chromium cannot start here: {exc}")
        yield browser
        browser.close()


def test_in_chromium_sign_in_content_refresh_phone_width_and_keyboard(
    gateway: Gateway, chromium: Any, tmp_path: Path
) -> None:
    context = chromium.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    violations: list[str] = []
    page.on("console", lambda message: violations.append(message.text) if "Content Security" in message.text else None)
    page.goto(f"{gateway.url}/status")
    assert page.locator("h1").inner_text() == "mcp-sections gateway"
    page.keyboard.type(TOKEN)  # the token field has the focus
    page.keyboard.press("Enter")
    page.wait_for_selector("#live")
    cookies = {cookie["name"]: cookie for cookie in context.cookies()}
    session = cookies["mcp_sections_status"]
    assert session["httpOnly"] and session["sameSite"] == "Strict" and session["path"] == "/status"
    assert page.evaluate("document.cookie") == "", "scripts cannot read the session"

    live = page.locator("#live")
    for heading in ("Gateway", "Sections", "Sub-agents", "Recent calls", "Brain projects"):
        assert live.get_by_role("heading", name=heading).count() == 1
    sections = page.locator("section[aria-labelledby=sections-h] tbody tr")
    assert sections.count() >= 5 and "calculator" in sections.first.inner_text()
    calls = page.locator("section[aria-labelledby=calls-h] tbody tr")
    assert calls.count() >= 4
    assert "calculator_binary" in page.locator("section[aria-labelledby=calls-h]").inner_text()
    nested = page.locator("section[aria-labelledby=agents-h] .tree li li")
    assert nested.count() >= 1 and "depth 2" in nested.first.inner_text()
    brain = page.locator("section[aria-labelledby=brain-h]").inner_text()
    assert "shop" in brain if gateway.brain else "no SQLite brain" in brain
    page.screenshot(path=str(tmp_path / STATUS_SCREENSHOT), full_page=True)
    assert (tmp_path / STATUS_SCREENSHOT).stat().st_size > 10_000

    # refreshed without reloading: the live part changes, the page (and a mark left on it) stays
    page.evaluate("window.__kept = true")
    before = page.locator("#live dl").inner_text()
    page.wait_for_function(
        "(before) => document.querySelector('#live dl').innerText !== before", arg=before, timeout=15000
    )
    assert page.evaluate("window.__kept") is True

    # the keyboard reaches the refresh switch, then every scrollable table
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "refresh"
    page.keyboard.press("Space")
    assert page.evaluate("document.getElementById('refresh').checked") is False
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.classList.contains('scroll')")

    # phone width: nothing wider than the screen but the tables' own scroll areas
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(tmp_path / "status-phone.png"), full_page=True)
    assert not violations, violations
    context.close()


def test_docs_screenshot_is_in_the_repository() -> None:
    picture = REPO / "docs" / STATUS_SCREENSHOT
    assert picture.is_file() and picture.stat().st_size < 400_000
    assert f"docs/{STATUS_SCREENSHOT}" in (REPO / "README.md").read_text(encoding="utf-8")
    assert sys.executable  # the screenshot is made by this module's Chromium test (see the README)
