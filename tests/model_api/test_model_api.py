"""The one model-API client layer (`shared.net.model_api`) as its users meet it, against a scripted stand-in on
127.0.0.1: both Anthropic base-URL forms reach `/v1/messages` for the sub-agent model and media_ops' vision model;
failures are coded and name the setting to fix; the key goes in a header only."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from mcp_sections.servers.media_ops.providers import VisionModel
from mcp_sections.servers.pool.settings import ModelSettings
from mcp_sections.shared.agents.providers import Message, provider_from_config
from mcp_sections.shared.confinement.guards.urls import AllowList, UrlGuard
from mcp_sections.shared.net.fetch import GuardedHttp
from mcp_sections.shared.net.model_api import ModelApiFailure, ModelEndpoint
from tests.http_stand_in import ScriptedHandler, serving

KEY = "sk-model-api-test-0001"


@dataclass
class StandIn:
    """An Anthropic Messages API (and an OpenAI-compatible chat endpoint) that records what it was sent."""

    port: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200  # answered with an error naming the key sent, to check it is never shown

    def base(self, tail: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{tail}"


@contextmanager
def stand_in() -> Iterator[StandIn]:
    running = StandIn()

    class Handler(ScriptedHandler):
        def do_POST(self) -> None:
            body = self.read_json()
            running.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            if running.status != 200:
                key = self.headers.get("x-api-key") or self.headers.get("Authorization") or ""
                self.answer_json(running.status, {"error": {"message": f"scripted failure for key {key}"}})
            elif self.path == "/v1/messages":
                content = [{"type": "text", "text": "A red square."}]
                self.answer_json(200, {"content": content, "usage": {"input_tokens": 5, "output_tokens": 3}})
            elif self.path == "/v1/chat/completions":
                self.answer_json(200, {"choices": [{"message": {"content": "A red square."}, "finish_reason": "stop"}]})
            else:
                self.answer_json(404, {"error": {"message": f"no route {self.path}"}})

    with serving(Handler) as running.port:
        yield running


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandIn]:
    monkeypatch.setenv("MODEL_API_TEST_KEY", KEY)
    with stand_in() as running:
        yield running


async def ask_agent(base_url: str, provider: str = "anthropic") -> str:
    config = ModelSettings.load(
        {"provider": provider, "model": "m", "base_url": base_url, "api_key_env": "MODEL_API_TEST_KEY"}
    )
    turn = await provider_from_config(config).complete("sys", [Message(role="user", content="hi")], [])
    return turn.text


async def ask_vision(stand: StandIn, base_url: str, provider: str = "anthropic") -> str:
    http = GuardedHttp(UrlGuard(AllowList.parse([f"127.0.0.1:{stand.port}"])), user_agent="test")
    try:
        vision = VisionModel(provider, "m", base_url, "MODEL_API_TEST_KEY")  # type: ignore[arg-type]
        return await vision.describe(http, "What is it?", "aGVsbG8=", "image/png", 50)
    finally:
        await http.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("tail", ["", "/", "/v1", "/v1/"])
async def test_both_anthropic_base_url_forms_reach_v1_messages(model: StandIn, tail: str) -> None:
    assert await ask_agent(model.base(tail)) == "A red square."
    assert await ask_vision(model, model.base(tail)) == "A red square."
    assert [request["path"] for request in model.requests] == ["/v1/messages", "/v1/messages"]
    for request in model.requests:
        assert request["headers"]["x-api-key"] == KEY and request["headers"]["anthropic-version"]
        assert "Authorization" not in request["headers"]


@pytest.mark.anyio
async def test_an_openai_compatible_base_url_is_used_as_given(model: StandIn) -> None:
    assert await ask_agent(model.base("/v1"), "openai") == "A red square."
    assert await ask_vision(model, model.base("/v1"), "openai") == "A red square."
    assert [request["path"] for request in model.requests] == ["/v1/chat/completions"] * 2
    assert all(request["headers"]["Authorization"] == f"Bearer {KEY}" for request in model.requests)


def test_default_base_urls() -> None:
    anthropic = ModelEndpoint("anthropic", None, None, "[gateway.model] ")
    assert anthropic.url("/messages") == "https://api.anthropic.com/v1/messages"
    assert ModelEndpoint("openai", None, None, "").url("/embeddings") == "https://api.openai.com/v1/embeddings"
    hidden = ModelEndpoint("openai", "https://user:secret@models.example/v1", None, "")
    assert hidden.shown_base == "https://models.example/v1"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "code", "says"),
    [
        (401, "DEPENDENCY_ERROR", "refused the key (HTTP 401); check the key in $MODEL_API_TEST_KEY ("),
        (404, "DEPENDENCY_ERROR", "base_url"),
        (400, "EXECUTION_FAILED", "refused the request (HTTP 400)"),
        (429, "EXECUTION_FAILED", "retry later"),
        (503, "EXECUTION_FAILED", "retry later"),
        (500, "DEPENDENCY_ERROR", "failed (HTTP 500)"),
    ],
)
async def test_failures_are_coded_name_the_setting_and_never_show_the_key(
    model: StandIn, status: int, code: str, says: str
) -> None:
    model.status = status
    with pytest.raises(ModelApiFailure) as agent:
        await ask_agent(model.base())
    with pytest.raises(ModelApiFailure) as vision:
        await ask_vision(model, model.base())
    for failure, settings in ((agent.value, "[gateway.model] "), (vision.value, "[sections.media_ops] vision_")):
        assert failure.code.value == code and says in failure.message and failure.status == status
        assert KEY not in failure.message
        if status == 401:
            assert f"{settings}api_key_env" in failure.message
        if status == 404:
            assert f"{settings}base_url" in failure.message and f"{settings}model" in failure.message


@pytest.mark.anyio
async def test_unreachable_and_unset_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with stand_in() as closed:
        port = closed.port
    with pytest.raises(ModelApiFailure) as unreachable:
        monkeypatch.setenv("MODEL_API_TEST_KEY", KEY)
        await ask_agent(f"http://127.0.0.1:{port}")
    assert unreachable.value.code.value == "DEPENDENCY_ERROR" and unreachable.value.retryable
    assert "[gateway.model] base_url" in unreachable.value.message
    monkeypatch.delenv("MODEL_API_TEST_KEY")
    with pytest.raises(ModelApiFailure, match="MODEL_API_TEST_KEY is not set") as unset:
        await ask_vision(StandIn(port=port), f"http://127.0.0.1:{port}")
    assert "[sections.media_ops] vision_api_key_env" in unset.value.message
    optional = ModelEndpoint("openai", None, "MODEL_API_TEST_KEY", "embedding_", key_required=False)
    assert "Authorization" not in optional.headers()
