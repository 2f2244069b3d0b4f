"""The replicas' secret from a key file (`MCP_SECTIONS_REQUEST_STATE_KEY_FILE`) instead of Redis: two real gateway
replicas given the same file, and nothing shared else, behind HAProxy, take each other's 2026-07-28 approval answers;
what such a file may hold (a ring of long secrets, newest first, that other users cannot write), and a replica whose
file is refused does not start."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_sections.shared.ground.errors import ConfigError
from tests.orchestration.helpers import User
from tests.processes import free_port
from tests.stdio import cli_command
from tests.team.replicas import approving_client, gateway_environment, replicas, write_approved

pytestmark = pytest.mark.anyio


async def test_the_key_file_is_shared_without_redis(tmp_path: Path) -> None:
    key_file = tmp_path / "request_state_key"
    key_file.write_text("# newest first\n" + "n" * 40 + "\n" + "o" * 40 + "\n", encoding="utf-8")
    key_file.chmod(0o600)
    with replicas(tmp_path, {"MCP_SECTIONS_REQUEST_STATE_KEY_FILE": str(key_file)}) as running:
        user, served = User(), []
        async with approving_client(running.url, user, served) as client:
            for number in range(2):
                result = await write_approved(client, user, running.root / f"keyed-{number}.txt")
                assert not result.is_error, result.content
        assert {"a", "b"} <= set(served)


def test_a_key_file_holds_a_ring_of_long_secrets_nobody_else_may_write(tmp_path: Path) -> None:
    from mcp_sections.shared.serving.replica_secret import read_key_file  # here: the file runs on 41ba6f4 too

    key_file = tmp_path / "key"
    key_file.write_text("\n# the new one first\n" + "n" * 43 + "\n" + "o" * 43 + "\n", encoding="utf-8")
    key_file.chmod(0o644)  # a compose secret the server's user reads
    assert read_key_file(key_file) == (b"n" * 43, b"o" * 43)
    for text, mode, said in [
        ("n" * 43, 0o666, "writable by other users"),
        ("short", 0o600, "shorter than 32 characters"),
        ("# nothing\n", 0o600, "holds no secret"),
        ("n" * 43 + "\n" + "n" * 43, 0o600, "names one secret twice"),
    ]:
        key_file.write_text(text, encoding="utf-8")
        key_file.chmod(mode)
        with pytest.raises(ConfigError, match=said):
            read_key_file(key_file)
    with pytest.raises(ConfigError, match="cannot read"):
        read_key_file(tmp_path / "missing")


def test_a_replica_whose_key_file_is_refused_does_not_start(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text("short\n", encoding="utf-8")
    environment = gateway_environment({"MCP_SECTIONS_REQUEST_STATE_KEY_FILE": str(key_file)})
    command = [
        *cli_command(),
        "gateway",
        "--transport",
        "http",
        "--port",
        str(free_port()),
        "--data-dir",
        str(tmp_path),
    ]
    ended = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=30)
    assert ended.returncode != 0
    assert "MCP_SECTIONS_REQUEST_STATE_KEY_FILE" in ended.stderr and "shorter than 32" in ended.stderr, ended.stderr
