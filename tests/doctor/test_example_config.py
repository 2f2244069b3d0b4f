"""`config.example.toml` stays valid: every table in it is read by the settings it documents."""

from __future__ import annotations

from pathlib import Path

from mcp_sections.servers.pool.settings import load_gateway_settings
from mcp_sections.servers.registry import all_sections
from mcp_sections.shared.settings.config import load_settings

EXAMPLE = Path(__file__).resolve().parents[2] / "config.example.toml"


def test_the_example_config_loads_for_the_gateway_and_every_section() -> None:
    settings = load_settings(EXAMPLE)
    assert load_gateway_settings(settings).max_subagents >= 1
    for section in all_sections():
        section.runtime(settings)  # refuses unknown keys of [sections.<id>]
    assert set(settings.sections) <= {section.id for section in all_sections()}


def test_every_commented_key_is_a_real_setting(tmp_path: Path) -> None:
    """Uncommenting the example's `# key = value` lines must still load (no stale key names)."""
    lines = []
    for line in EXAMPLE.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith("# [") or (stripped.startswith("# ") and " = " in stripped.split("#")[1]):
            candidate = stripped[2:]
            if candidate.startswith("[") or "=" in candidate.split("#")[0]:
                line = candidate
        lines.append(line)
    uncommented = tmp_path / "config.toml"
    uncommented.write_text("\n".join(lines) + "\n", encoding="utf-8")
    settings = load_settings(uncommented)
    load_gateway_settings(settings)
    for section in all_sections():
        section.runtime(settings)
