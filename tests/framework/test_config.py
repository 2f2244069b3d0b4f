"""Configuration layering: defaults < config file < environment < CLI flags."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import Field

from mcp_sections.shared.settings.config import ConfigError, SectionSettings, load_settings


class ExampleSettings(SectionSettings):
    env_prefix: ClassVar[str] = "MCP_SECTIONS_EXAMPLE_"
    limit: int = 10
    label: str = "default"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_file_env_cli_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = _write(tmp_path / "c.toml", f'log_level = "INFO"\ndata_dir = "{tmp_path / "from-file"}"\n')
    monkeypatch.delenv("MCP_SECTIONS_DATA_DIR")
    assert load_settings(config).data_dir == tmp_path / "from-file"
    assert load_settings(config).log_level == "INFO"
    monkeypatch.setenv("MCP_SECTIONS_DATA_DIR", str(tmp_path / "from-env"))
    assert load_settings(config).data_dir == tmp_path / "from-env"
    assert load_settings(config, data_dir=tmp_path / "from-cli").data_dir == tmp_path / "from-cli"


def test_roots_from_env_use_the_path_separator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SECTIONS_ROOTS", os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")]))
    assert load_settings().roots == [tmp_path / "a", tmp_path / "b"]
    assert load_settings(roots=[tmp_path / "c"]).roots == [tmp_path / "c"]


def test_section_settings_from_file_table_then_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = _write(tmp_path / "c.toml", '[sections.example]\nlimit = 3\nlabel = "file"\n')
    settings = load_settings(config)
    assert settings.section_settings(ExampleSettings, "example").limit == 3
    monkeypatch.setenv("MCP_SECTIONS_EXAMPLE_LIMIT", "7")
    example = load_settings(config).section_settings(ExampleSettings, "example")
    assert (example.limit, example.label) == (7, "file")


def test_missing_or_broken_config_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(_write(tmp_path / "bad.toml", "log_level = \n"))


class TableSettings(SectionSettings):
    env_prefix: ClassVar[str] = "MCP_SECTIONS_TABLES_"
    agents: dict[str, int] = Field(default_factory=dict)
    enabled: bool = False


def test_environment_names_match_in_any_case_and_empty_values_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("mcp_sections_example_limit", "4")
    monkeypatch.setenv("MCP_SECTIONS_EXAMPLE_LABEL", "")
    example = ExampleSettings.load({"label": "file"})
    assert (example.limit, example.label) == (4, "file")


def test_table_valued_settings_come_from_the_environment_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SECTIONS_TABLES_AGENTS", '{"scout": 2}')
    monkeypatch.setenv("MCP_SECTIONS_TABLES_ENABLED", "yes")
    tables = TableSettings.load()
    assert (tables.agents, tables.enabled) == ({"scout": 2}, True)
    monkeypatch.setenv("MCP_SECTIONS_TABLES_AGENTS", "scout=2")
    with pytest.raises(ConfigError, match="MCP_SECTIONS_TABLES_AGENTS must be a JSON object"):
        TableSettings.load()
