"""What nested sub-agents spend is counted where they were started: a plan_actions whose sub-agent starts another
reports its own tokens and, beside them, the total with every sub-agent below (its metrics, each action's, and the
text report). The gateway in memory (the calculator in process); the model is a scripted stand-in on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway.helpers import write_config
from tests.gateway.scripted_model import Reply, Request, ScriptedModel, model_table
from tests.in_memory import gateway_in_memory
from tests.stdio import data_of

KEY = {"SCRIPTED_MODEL_KEY": "sk-nested-tokens"}
TOKENS = (11, 7)  # per model answer: every sub-agent below answers twice, 22 input / 14 output


def nest(request: Request) -> Reply:
    """Depth 1 hands the sum to a depth-2 sub-agent, which computes it."""
    if request.depth == 1:
        if request.turn == 0:
            inner = {"goal": "[script:nest] add 2 and 3", "sections": ["calculator"]}
            return Reply(tool_calls=[("plan_actions", inner)], tokens=TOKENS)
        return Reply(text="The deeper agent found 5 [plan_actions].", tokens=TOKENS)
    if request.turn == 0:
        return Reply(tool_calls=[("calculator_binary", {"operation": "add", "a": 2, "b": 3})], tokens=TOKENS)
    return Reply(text="2 + 3 = 5 [calculator_binary].", tokens=TOKENS)


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel({"nest": nest}) as server:
        yield server


@pytest.mark.anyio
async def test_a_plan_reports_its_own_tokens_and_those_of_the_sub_agents_below(
    tmp_path: Path, model: ScriptedModel
) -> None:
    config = write_config(tmp_path / "config.toml", model_table(model.base_url))
    args = ["--config", str(config), "--data-dir", str(tmp_path / "data"), "--in-process", "calculator"]
    async with gateway_in_memory(*args, env=KEY) as client:
        result = data_of(
            await client.call_tool("plan_actions", {"goal": "[script:nest] add 2 and 3", "sections": ["calculator"]})
        )
    assert result["success"] is True
    assert sorted(request.depth for request in model.requests) == [1, 1, 2, 2]
    for metrics in (result["metrics"], result["actions"][0]["metrics"]):
        assert (metrics["tokens_input"], metrics["tokens_output"]) == (22, 14)  # the depth-1 sub-agent's own
        assert (metrics["tokens_input_with_nested"], metrics["tokens_output_with_nested"]) == (44, 28)
        assert metrics["nested_agents"] == 1
    assert (
        "22 input / 14 output tokens by this plan's sub-agent; 44 input / 28 output with the 1 nested"
        in (result["report"])
    )
