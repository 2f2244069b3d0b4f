"""One default config file (`shared.ground.locations.default_config_file`): the one read when nothing names another,
the one messages name when none was read (the gateway's and shell_ops' hints), and its directory is the own state's
config directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_sections.servers.shell_ops.service import ShellOps
from mcp_sections.servers.shell_ops.settings import ShellOpsSettings
from mcp_sections.shared.agents.scope import ConfigFile
from mcp_sections.shared.confinement.own_state import own_state
from mcp_sections.shared.ground.locations import default_config_dir, default_config_file, find_config_file


def test_one_default_config_file_is_read_named_and_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config-home"))
    monkeypatch.delenv("MCP_SECTIONS_CONFIG", raising=False)
    default = tmp_path / "config-home" / "mcp-sections" / "config.toml"
    assert default_config_file() == default and default_config_dir() == default.parent
    assert find_config_file(None) is None  # optional while it does not exist
    assert ConfigFile.of(None) == ConfigFile(default, False)
    root = tmp_path / "root"
    root.mkdir()
    assert ShellOps(ShellOpsSettings.load({}), [root]).config_file == default
    default.parent.mkdir(parents=True)
    default.write_text("", encoding="utf-8")
    assert find_config_file(None) == default and ConfigFile.of(find_config_file(None)) == ConfigFile(default, True)
    state = own_state(tmp_path / "data", tmp_path / "cache", find_config_file(None))
    assert default.parent in state.directories and default in state.paths
