"""Every `[sections.<id>]` table of the config file is checked at start (gateway, serve, doctor) against its section's
settings, without starting a section: an outside tester's `embeding_backend` typo let the gateway start, and the first
memory call took 12 s to answer DEPENDENCY_ERROR; `[sections.memroy]` was accepted in silence; `doctor --config` was
refused; the unknown-key message did not name the file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_sections.servers import doctor
from mcp_sections.servers.pool.settings import load_gateway_settings
from mcp_sections.servers.registry import BUILTIN_SECTIONS, load_section
from mcp_sections.servers.todo.settings import TodoSettings
from mcp_sections.shared.settings.config import ConfigError, load_settings
from tests.stdio import cli_command

EXAMPLE = Path(__file__).resolve().parents[2] / "config.example.toml"


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*cli_command(), *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )


def _refused(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a refused start prints (status 2, no traceback)."""
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr


def test_a_key_typo_in_a_section_table_stops_the_gateway_at_start(tmp_path: Path) -> None:
    config = _config(tmp_path, '[sections.memory]\nembeding_backend = "onnx"\n')
    line = _refused(_run("gateway", "--config", str(config)))
    assert f"unknown setting 'embeding_backend' in [sections.memory] of the config file {config}" in line, line
    assert "(did you mean 'embedding_backend'?)" in line and "valid keys: duplicate_threshold," in line, line


def test_an_unknown_section_id_is_refused_by_gateway_serve_and_doctor(tmp_path: Path) -> None:
    config = _config(tmp_path, "[sections.memroy]\nx = 1\n")
    for command in (("gateway",), ("serve", "todo"), ("doctor",)):
        line = _refused(_run(*command, "--config", str(config)))
        assert (
            f"unknown section [sections.memroy] in the config file {config} (did you mean [sections.memory]?)" in line
        )
        assert f"known sections: {', '.join(sorted(BUILTIN_SECTIONS))}" in line, (command, line)


def test_a_section_served_alone_refuses_a_bad_value_of_another_section_in_one_line(tmp_path: Path) -> None:
    config = _config(tmp_path, '[sections.memory]\nembedding_backend = "onx"\n')
    line = _refused(_run("serve", "calculator", "--config", str(config)))
    assert f"embedding_backend = 'onx' in [sections.memory] of the config file {config}: Input should be" in line


def test_doctor_reads_the_config_file_given_with_config(tmp_path: Path) -> None:
    """`--config` means for doctor what it means for gateway and serve: the file read, here one that asks for Neo4j."""
    config = _config(tmp_path, '[sections.rag_ops]\nbackend = "neo4j"\n')
    result = _run("doctor", "rag_ops", "--json", "--config", str(config), env={"NEO4J_URI": ""})
    assert result.returncode == 1 and "backend = neo4j but NEO4J_URI is not set" in result.stdout, result
    assert "backend = neo4j" not in _run("doctor", "rag_ops", "--json", env={"NEO4J_URI": ""}).stdout


def test_the_unknown_key_message_names_the_config_file(tmp_path: Path) -> None:
    config = _config(tmp_path, "[sections.todo]\nmax_task_per_workflow = 3\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(config).section_settings(TodoSettings, "todo")
    assert f"in [sections.todo] of the config file {config} (did you mean 'max_tasks_per_workflow'?)" in str(
        caught.value
    )
    with pytest.raises(ConfigError, match=f"in the top level of the config file {config}"):
        load_settings(_config(tmp_path, 'datadir = "x"\n'))
    for table, key in (("[gateway]", "max_dept"), ("[gateway.model]", "api_key_envv")):
        with pytest.raises(ConfigError, match=re.escape(f"in {table} of the config file {config}")):
            load_gateway_settings(load_settings(_config(tmp_path, f"{table}\n{key} = 1\n")))


def test_a_third_party_section_table_is_left_with_a_note(tmp_path: Path) -> None:
    """A third-party section's settings are its own server's: its table is not refused, and the note says so."""
    config = _config(
        tmp_path, '[gateway.sections.github]\nurl = "http://127.0.0.1:9/mcp"\n\n[sections.github]\ntoken_env = "X"\n'
    )
    notes = doctor.check_config(load_settings(config))
    assert notes == [
        f"[sections.github] of the config file {config} is not checked: github is a third-party section "
        "([gateway.sections.github]), whose settings the suite does not know"
    ]
    with pytest.raises(
        ConfigError, match=r"\[sections.githb\] in the config file .*\(did you mean \[sections.github\]"
    ):
        doctor.check_config(load_settings(_config(tmp_path, config.read_text() + "[sections.githb]\n")))


def test_every_section_settings_model_is_found_without_importing_the_section() -> None:
    for section_id in BUILTIN_SECTIONS:
        assert doctor.settings_model(section_id) is load_section(section_id).settings_model, section_id


def test_the_check_imports_no_section_and_nothing_heavy() -> None:
    """config.example.toml has a table for every section: all are checked, none is imported (nor sympy, torch, ...)."""
    heavy = ("sympy", "numpy", "torch", "onnxruntime", "PIL", "lxml", "playwright", "neo4j", "tokenizers", "trimesh")
    script = (
        "import sys\n"
        "from mcp_sections.servers.doctor import check_config\n"
        "from mcp_sections.shared.settings.config import load_settings\n"
        "from pathlib import Path\n"
        f"settings = load_settings(Path({str(EXAMPLE)!r}))\n"
        "assert len(settings.sections) == 9, settings.sections\n"
        "assert check_config(settings) == []\n"
        f"print(sorted(name for name in sys.modules if name.endswith('.section') or name.split('.')[0] in {heavy!r}))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", result.stdout
