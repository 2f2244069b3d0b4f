"""The sub-agents' API key is optional until the endpoint asks for one. The README's own `[gateway.model]` example
(`api_key_env = "OPENAI_API_KEY"`) works as written against a keyless local endpoint with that variable unset; an
endpoint that wants a key and gets none (the variable unset — as when an MCP client starts the gateway over stdio
with only HOME, PATH, …) is a DEPENDENCY_ERROR saying to put the variable in the client entry's "env". The gateway in
memory (the calculator in process); the model is a scripted stand-in on 127.0.0.1, with or without a key."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway.helpers import write_config
from tests.gateway.scripted_model import Reply, Request, ScriptedModel, model_table
from tests.in_memory import gateway_in_memory
from tests.stdio import REPO, data_of, error_of

KEY = "sk-standin-7"
PLAN = {"goal": "[script:add] add 2 and 3", "sections": ["calculator"]}


def add(request: Request) -> Reply:
    if request.turn == 0:
        return Reply(tool_calls=[("calculator_binary", {"operation": "add", "a": 2, "b": 3})])
    return Reply(text="2 + 3 = 5 [calculator_binary].")


@pytest.fixture(scope="module")
def keyless() -> Iterator[ScriptedModel]:
    with ScriptedModel({"add": add}) as server:
        yield server


@pytest.fixture(scope="module")
def keyed() -> Iterator[ScriptedModel]:
    with ScriptedModel({"add": add}, key=KEY) as server:
        yield server


@pytest.fixture(autouse=True)
def unset(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("OPENAI_API_KEY", "STANDIN_KEY"):
        monkeypatch.delenv(variable, raising=False)


def readme_model_table(base_url: str) -> str:
    """The README's `[gateway.model]` example, as written, pointed at `base_url` instead of a local Ollama."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```toml\n(\[gateway\.model\]\nprovider = \"openai\".*?)```", readme, re.DOTALL)
    assert block is not None, "the README's [gateway.model] example is gone"
    assert 'api_key_env = "OPENAI_API_KEY"' in block.group(1)
    return block.group(1).replace("http://localhost:11434/v1", base_url)


def args_of(tmp_path: Path, table: str) -> list[str]:
    config = write_config(tmp_path / "config.toml", table)
    return ["--config", str(config), "--data-dir", str(tmp_path / "data"), "--in-process", "calculator"]


@pytest.mark.anyio
async def test_the_readme_example_runs_on_a_keyless_endpoint_with_its_key_variable_unset(
    tmp_path: Path, keyless: ScriptedModel
) -> None:
    async with gateway_in_memory(*args_of(tmp_path, readme_model_table(keyless.base_url))) as client:
        result = data_of(await client.call_tool("plan_actions", PLAN))
    assert result["success"] is True and "5 [calculator_binary]" in result["report"]
    assert keyless.requests and all(request.authorization is None for request in keyless.requests)


@pytest.mark.anyio
async def test_an_endpoint_that_wants_the_unset_key_says_where_to_set_it(tmp_path: Path, keyed: ScriptedModel) -> None:
    table = model_table(keyed.base_url, api_key_env="STANDIN_KEY")
    async with gateway_in_memory(*args_of(tmp_path, table)) as client:
        code, message = error_of(await client.call_tool("plan_actions", PLAN))
    assert code == "DEPENDENCY_ERROR"
    assert "refused the call without a key (HTTP 401)" in message and "STANDIN_KEY" in message
    assert "MCP clients that start servers over stdio pass them only a few variables" in message
    assert 'put STANDIN_KEY in the client entry\'s "env" (e.g. {"env": {"STANDIN_KEY": "..."}}' in message
    # with the variable set (as the entry's "env" would), the same gateway configuration works
    async with gateway_in_memory(*args_of(tmp_path, table), env={"STANDIN_KEY": KEY}) as client:
        assert data_of(await client.call_tool("plan_actions", PLAN))["success"] is True
    assert keyed.requests[-1].authorization == f"Bearer {KEY}"
