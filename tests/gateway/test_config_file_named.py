"""Messages that say to configure something in the config file name the file this server reads, and
get_environment_info shows it (its path, and whether it exists). The gateway in memory; doctor's probe run directly."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from mcp_sections.servers.doctor import check_section
from mcp_sections.shared.settings.config import Settings, load_settings
from tests.gateway.helpers import write_config
from tests.in_memory import gateway_in_memory
from tests.stdio import data_of, error_of


@pytest.mark.anyio
async def test_the_config_file_read_is_named(tmp_path: Path) -> None:
    config = write_config(tmp_path / "gateway.toml", "[gateway]\nmax_subagents = 2\n")
    async with gateway_in_memory("--config", str(config), "--data-dir", str(tmp_path / "data"), cwd=tmp_path) as client:
        code, message = error_of(await client.call_tool("plan_actions", {"goal": "x", "sections": ["calculator"]}))
        assert code == "DEPENDENCY_ERROR" and f"in the config file {config}:\n[gateway.model]" in message
        info = data_of(await client.call_tool("get_environment_info", {}))
    assert info["config_file"] == {"path": str(config), "exists": True}
    report = check_section("orchestration", load_settings(config))
    assert report.status == "degraded" and f"are unset in {config}) — set [gateway.model]" in report.hints[0]


@pytest.mark.anyio
async def test_without_a_config_file_the_default_one_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_sections.servers.gateway.server import build_gateway_server
    from mcp_sections.servers.pool.settings import GatewaySettings

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config-home"))
    default = tmp_path / "config-home" / "mcp-sections" / "config.toml"
    server, _ = build_gateway_server(Settings.load(data_dir=tmp_path / "data"), GatewaySettings.load({}))
    async with Client(server) as client:
        code, message = error_of(await client.call_tool("plan_actions", {"goal": "x", "sections": ["calculator"]}))
        assert code == "DEPENDENCY_ERROR"
        assert f"in the config file {default} (none yet: create it, or pass --config):" in message
        info = data_of(await client.call_tool("get_environment_info", {}))
    assert info["config_file"] == {"path": str(default), "exists": False}


@pytest.mark.anyio
async def test_an_agent_can_see_that_approval_is_on_and_where_it_is_answered(tmp_path: Path) -> None:
    """An outside tester's agent could not tell that a call would wait for the person, nor where they answer."""
    args = ("--data-dir", str(tmp_path / "data"))
    async with gateway_in_memory(*args, env={"MCP_SECTIONS_APPROVAL": "destructive"}, cwd=tmp_path) as client:
        before = data_of(await client.call_tool("get_environment_info", {}))["approval"]
        client.gateway.questions.open_at("http://127.0.0.1:8765/status")  # type: ignore[attr-defined]
        after = data_of(await client.call_tool("get_environment_info", {}))["approval"]
    assert before["mode"] == "destructive" and before["asked_at"] is None and before["timeout_seconds"] > 0
    assert after["asked_at"] == "http://127.0.0.1:8765/status"
    async with gateway_in_memory(*args, cwd=tmp_path) as client:
        assert data_of(await client.call_tool("get_environment_info", {}))["approval"]["mode"] == "off"
