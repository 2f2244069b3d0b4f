"""`max_depth = 0` switches sub-agents off: plan_actions is not listed, and calling it anyway says so — the setting and
where it is set (the config file, the environment or the command line) — instead of "unknown tool"; orchestration's
spawn_agent behind that gateway says the same. The gateway in memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gateway.helpers import write_config
from tests.in_memory import gateway_in_memory
from tests.stdio import error_of

PLAN = {"goal": "sum 2 and 3", "sections": ["calculator"]}


@pytest.fixture(autouse=True)
def no_depth_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_SECTIONS_GATEWAY_MAX_DEPTH", raising=False)


@pytest.mark.anyio
async def test_plan_actions_at_max_depth_zero_names_the_setting_in_the_config_file(tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.toml", "[gateway]\nmax_depth = 0\n")
    async with gateway_in_memory("--config", str(config), "--data-dir", str(tmp_path / "data")) as client:
        assert "plan_actions" not in [tool.name for tool in (await client.list_tools()).tools]
        code, message = error_of(await client.call_tool("plan_actions", PLAN))
        assert code == "NOT_FOUND"
        assert message == (
            f"plan_actions is off: [gateway] max_depth = 0 in {config}; raise it to allow sub-agents."
        ), message
        forwarded = {"section": "orchestration", "tool": "spawn_agent", "arguments": {"name": "x", "prompt": "y"}}
        code, message = error_of(await client.call_tool("call_section_tool", forwarded))
        assert code == "MAX_LIMIT_EXCEEDED" and f"[gateway] max_depth = 0 in {config}; raise it" in message


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("args", "env", "said"),
    [
        (("--max-depth", "0"), {}, "--max-depth 0 on the gateway's command line"),
        ((), {"MCP_SECTIONS_GATEWAY_MAX_DEPTH": "0"}, "MCP_SECTIONS_GATEWAY_MAX_DEPTH=0 in the gateway's environment"),
    ],
    ids=["command-line", "environment"],
)
async def test_plan_actions_off_names_where_max_depth_was_set(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str], said: str
) -> None:
    config = write_config(tmp_path / "config.toml", "[gateway]\nmax_depth = 2\n")
    async with gateway_in_memory(
        "--config", str(config), "--data-dir", str(tmp_path / "data"), *args, env=env
    ) as client:
        code, message = error_of(await client.call_tool("plan_actions", PLAN))
    assert code == "NOT_FOUND" and message == f"plan_actions is off: {said}; raise it to allow sub-agents."
