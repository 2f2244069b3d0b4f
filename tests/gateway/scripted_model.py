"""A scripted OpenAI-compatible Chat Completions server on 127.0.0.1, for driving sub-agents in tests.

The first user message of a conversation names its script, `[script:<name>]`. A script is a function
`(Request) -> Reply`: it sees what the runtime sent (depth from the system prompt, tool names, the
conversation) and answers with tool calls or a final text, optionally after a delay. Every request is
recorded (with the number of conversations in flight, to check the sub-agent limit).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.http_stand_in import ScriptedHandler, Serving


@dataclass
class Request:
    script: str
    depth: int | None
    tools: list[str]
    messages: list[dict[str, Any]]
    authorization: str | None

    @property
    def turn(self) -> int:
        """How many answers the model already gave in this conversation."""
        return sum(1 for message in self.messages if message["role"] == "assistant")

    @property
    def tool_results(self) -> list[str]:
        return [message["content"] for message in self.messages if message["role"] == "tool"]

    @property
    def goal(self) -> str:
        return next(message["content"] for message in self.messages if message["role"] == "user")


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    delay: float = 0.0
    tokens: tuple[int, int] = (10, 5)


Script = Callable[[Request], Reply]


class ScriptedModel:
    def __init__(self, scripts: dict[str, Script], key: str | None = None) -> None:
        """`key`: the API key it requires (`Authorization: Bearer <key>`, else HTTP 401); None: it needs none."""
        self.scripts = scripts
        self.key = key
        self.requests: list[Request] = []
        self.in_flight = 0
        self.peak_in_flight = 0
        self._lock = threading.Lock()
        self._served = Serving(self._handler())

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._served.port}/v1"

    def __enter__(self) -> ScriptedModel:
        self._served.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._served.stop()

    def answer(self, body: dict[str, Any], authorization: str | None) -> dict[str, Any]:
        messages = body.get("messages") or []
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        depth = re.search(r"at depth (\d+)", system)
        first_user = next((m["content"] for m in messages if m["role"] == "user"), "")
        name = re.search(r"\[script:([a-z_]+)\]", first_user)
        request = Request(
            script=name.group(1) if name else "",
            depth=int(depth.group(1)) if depth else None,
            tools=[tool["function"]["name"] for tool in body.get("tools") or []],
            messages=[m for m in messages if m["role"] != "system"],
            authorization=authorization,
        )
        with self._lock:
            self.requests.append(request)
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            reply = self.scripts[request.script](request)
            if reply.delay:
                time.sleep(reply.delay)
        finally:
            with self._lock:
                self.in_flight -= 1
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{len(self.requests)}_{index}",
                    "type": "function",
                    "function": {"name": tool, "arguments": json.dumps(arguments)},
                }
                for index, (tool, arguments) in enumerate(reply.tool_calls)
            ]
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}
            ],
            "usage": {
                "prompt_tokens": reply.tokens[0],
                "completion_tokens": reply.tokens[1],
                "total_tokens": reply.tokens[0] + reply.tokens[1],  # OpenAI's shape; pydantic-ai requires it
            },
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(ScriptedHandler):
            def do_POST(self) -> None:
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self.send_error(404)
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if model.key is not None and self.headers.get("Authorization") != f"Bearer {model.key}":
                    self.answer_json(401, {"error": {"message": "Incorrect API key provided."}})
                    return
                try:
                    self.answer_json(200, model.answer(body, self.headers.get("Authorization")))
                except Exception as exc:  # a broken script is reported to the gateway as a server error
                    self.answer_json(500, {"error": {"message": f"script failed: {exc!r}"}})

        return Handler


def model_table(base_url: str, api_key_env: str = "SCRIPTED_MODEL_KEY") -> str:
    return (
        "[gateway.model]\n"
        'provider = "openai"\n'
        'model = "scripted"\n'
        f'base_url = "{base_url}"\n'
        f'api_key_env = "{api_key_env}"\n'
        "timeout_seconds = 30\n"
    )
