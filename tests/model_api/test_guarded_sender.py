"""A model API reached through the URL guard (`GuardedSender`, as media_ops reaches its providers) fails as one reached
directly (`HttpxSender`): nothing listening or a host name that does not resolve is DEPENDENCY_ERROR naming its
base_url setting, no answer in time is TIMEOUT naming its timeout setting; the guard's refusals stay as they are."""

from __future__ import annotations

import socket
import threading
from typing import Any

import pytest

from mcp_sections.shared.confinement.guards.urls import AllowList, UrlGuard
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.net.fetch import GuardedHttp
from mcp_sections.shared.net.model_api import CHAT_COMPLETIONS, GuardedSender, ModelApiFailure, ModelEndpoint, call_json
from tests.http_stand_in import ScriptedHandler, serving

pytestmark = pytest.mark.anyio

SETTINGS = "[gateway.model] "


def refusing_port() -> int:
    """A port on 127.0.0.1 where nothing listens: connections are refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def ask(base_url: str, allow: list[str], timeout_seconds: float = 20.0) -> dict[str, Any]:
    endpoint = ModelEndpoint(
        "openai", base_url, None, SETTINGS, what="the model", timeout_setting=f"{SETTINGS}timeout_seconds"
    )
    http = GuardedHttp(UrlGuard(AllowList.parse(allow)), user_agent="test", timeout_seconds=timeout_seconds)
    try:
        return await call_json(endpoint, GuardedSender(http, 1_000_000), "POST", CHAT_COMPLETIONS, {"model": "m"})
    finally:
        await http.aclose()


async def test_a_model_api_that_refuses_the_connection_is_a_dependency_error_naming_base_url() -> None:
    port = refusing_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(ModelApiFailure) as caught:
        await ask(base_url, [f"127.0.0.1:{port}"])
    failure = caught.value
    assert failure.code is ErrorCode.DEPENDENCY_ERROR and failure.retryable and failure.status is None
    assert failure.message.startswith(f"cannot reach the model at {base_url} (could not connect to "), failure.message
    assert failure.message.endswith("check that it runs and [gateway.model] base_url."), failure.message


async def test_a_model_api_whose_host_does_not_resolve_is_a_dependency_error_naming_base_url() -> None:
    base_url = "http://models.invalid/v1"  # RFC 6761: never resolves
    with pytest.raises(ModelApiFailure) as caught:
        await ask(base_url, [])
    failure = caught.value
    assert failure.code is ErrorCode.DEPENDENCY_ERROR, failure.message
    assert failure.message.startswith(f"cannot reach the model at {base_url} (the host 'models.invalid' could not be ")
    assert "[gateway.model] base_url" in failure.message and "check the URL" not in failure.message


async def test_a_model_api_too_slow_to_answer_is_a_timeout_naming_its_timeout_setting() -> None:
    answer = threading.Event()

    class Held(ScriptedHandler):
        def do_POST(self) -> None:
            answer.wait(30)
            self.answer_json(200, {"choices": []})

    with serving(Held) as port:
        base_url = f"http://127.0.0.1:{port}/v1"
        try:
            with pytest.raises(ModelApiFailure) as caught:
                await ask(base_url, [f"127.0.0.1:{port}"], timeout_seconds=0.5)
        finally:
            answer.set()
    failure = caught.value
    assert failure.code is ErrorCode.TIMEOUT and failure.retryable, failure.message
    assert failure.message == (
        f"the model at {base_url} did not answer in time (0.5 s); retry, or raise [gateway.model] timeout_seconds."
    )


async def test_the_url_guard_refusing_a_model_api_stays_permission_denied() -> None:
    base_url = f"http://127.0.0.1:{refusing_port()}/v1"  # loopback, not allowed
    with pytest.raises(ToolFailure) as caught:
        await ask(base_url, [])
    assert caught.value.code is ErrorCode.PERMISSION_DENIED and not isinstance(caught.value, ModelApiFailure)
