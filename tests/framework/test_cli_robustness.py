"""The CLI as people use it: piped into head, a wrong port, a typo in the config file, a foreign section id."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.stdio import cli_command


def _run(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cli_command(), *args], capture_output=True, text=True, timeout=120, **kwargs)  # type: ignore[call-overload]


def test_output_piped_into_head_ends_quietly() -> None:
    for command in ("tools calculator", "list"):
        result = subprocess.run(
            f"{' '.join(cli_command())} {command} | head -n 1", shell=True, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0 and "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr


def test_a_port_out_of_range_is_one_line() -> None:
    result = _run("serve", "todo", "--transport", "http", "--port", "99999")
    assert result.returncode == 2 and "not a port number (1-65535)" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) < 15


def test_config_typos_are_refused_with_the_valid_keys(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[gateway]\nmax_depht = 2\n", encoding="utf-8")
    result = _run("gateway", "--config", str(config), stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert "unknown setting 'max_depht' in [gateway]" in result.stderr and "max_depth" in result.stderr
    config.write_text("[sections.todo]\nmax_task = 3\n", encoding="utf-8")
    result = _run("serve", "todo", "--config", str(config), stdin=subprocess.DEVNULL)
    assert result.returncode == 2 and "max_tasks_per_workflow" in result.stderr
    config.write_text('datadir = "x"\n', encoding="utf-8")
    result = _run("serve", "todo", "--config", str(config), stdin=subprocess.DEVNULL)
    assert result.returncode == 2 and "unknown setting 'datadir' in the top level" in result.stderr


def test_doctor_reports_every_section() -> None:
    result = _run("doctor", "--json")
    assert result.returncode in (0, 1) and '"section": "calculator"' in result.stdout
    assert _run("doctor", "no_such_section").returncode == 2
