"""The guarded HTTP client's failures to reach a host are recognisable by type, with the host and the reason, and
keep the codes a page fetched directly has: `Unreachable` (a host name that does not resolve: NOT_FOUND; nothing
listening, a connection that breaks, endless redirects: EXECUTION_FAILED) and `TimedOut` (TIMEOUT, its seconds)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from mcp_sections.shared.confinement.guards.urls import AllowList, UrlGuard
from mcp_sections.shared.ground.errors import ErrorCode
from mcp_sections.shared.net.fetch import GuardedHttp, TimedOut, Unreachable
from tests.http_stand_in import ScriptedHandler, serving

pytestmark = pytest.mark.anyio


class Site(ScriptedHandler):
    """/loop redirects to itself, /hang-up closes the connection unanswered, /cut sends half its body, /slow waits."""

    slow = threading.Event()

    def do_GET(self) -> None:
        if self.path == "/loop":
            self.answer_bytes(302, b"", Location="/loop")
        elif self.path == "/hang-up":
            self.close_connection = True
        elif self.path == "/cut":
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"x" * 10)
            self.close_connection = True
        else:
            Site.slow.wait(30)
            self.answer_bytes(200, b"late")


@pytest.fixture
def port() -> Iterator[int]:
    Site.slow.clear()
    with serving(Site) as served:
        try:
            yield served
        finally:
            Site.slow.set()


def client(allow: list[str]) -> GuardedHttp:
    return GuardedHttp(UrlGuard(AllowList.parse(allow)), user_agent="test", timeout_seconds=0.5)


def refusing_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_a_host_that_does_not_resolve_is_unreachable_and_not_found() -> None:
    http = client([])
    with pytest.raises(Unreachable) as caught:
        await http.get("http://pages.invalid/a")
    await http.aclose()
    failure = caught.value
    assert failure.code is ErrorCode.NOT_FOUND and failure.host == "pages.invalid"
    assert failure.reason == "the host 'pages.invalid' could not be resolved"
    assert (
        failure.message.startswith("the host 'pages.invalid' could not be resolved (")
        and "check the URL" in failure.message
    )


async def test_nothing_listening_is_unreachable_and_execution_failed() -> None:
    port = refusing_port()
    http = client([f"127.0.0.1:{port}"])
    with pytest.raises(Unreachable) as caught:
        await http.request("POST", f"http://127.0.0.1:{port}/v1/x", content=b"{}")
    await http.aclose()
    failure = caught.value
    assert failure.code is ErrorCode.EXECUTION_FAILED and failure.host == "127.0.0.1"
    assert failure.reason.startswith(f"could not connect to http://127.0.0.1:{port} (")
    assert failure.message == f"{failure.reason}; check the URL or try again later."


@pytest.mark.parametrize(
    ("path", "reason", "said"),
    [
        ("/loop", "more than 5 redirects", "fetch the last target directly"),
        ("/hang-up", "the connection failed (", "/hang-up failed: "),
        ("/cut", "the connection broke while reading (", "reading http://127.0.0.1:"),
    ],
)
async def test_a_host_that_answers_nothing_usable_is_unreachable(port: int, path: str, reason: str, said: str) -> None:
    http = client([f"127.0.0.1:{port}"])
    with pytest.raises(Unreachable) as caught:
        await http.get(f"http://127.0.0.1:{port}{path}")
    await http.aclose()
    failure = caught.value
    assert failure.code is ErrorCode.EXECUTION_FAILED and failure.host == "127.0.0.1", failure.message
    assert failure.reason.startswith(reason) and said in failure.message, failure.message


async def test_no_answer_in_time_is_timed_out_with_its_seconds(port: int) -> None:
    http = client([f"127.0.0.1:{port}"])
    with pytest.raises(TimedOut) as caught:
        await http.get(f"http://127.0.0.1:{port}/slow")
    await http.aclose()
    failure = caught.value
    assert failure.code is ErrorCode.TIMEOUT and failure.host == "127.0.0.1" and failure.seconds == 0.5
    assert failure.message == f"http://127.0.0.1:{port}/slow did not answer within 0.5 s; try again later."
