"""The process runner on its own: capped output, spawn failures, fixed environment, group kill; the output ring of
long-running processes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcp_sections.servers.shell_ops.background import OutputRing, descendants
from mcp_sections.servers.shell_ops.homes import HOMES_PREFIX, pid_namespace, remove_stale_homes
from mcp_sections.servers.shell_ops.processes import (
    CappedBuffer,
    SpawnError,
    child_environment,
    kill_group,
    run_process,
)
from mcp_sections.servers.shell_ops.service import ShellOps
from mcp_sections.servers.shell_ops.settings import ShellOpsSettings
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure


def test_capped_buffer_keeps_head_and_tail() -> None:
    buffer = CappedBuffer(10)
    for chunk in (b"abc", b"defghij", b"klmnop"):
        buffer.feed(chunk)
    assert buffer.total == 16 and buffer.dropped == 6
    assert buffer.text() == "abcde\n[... 6 bytes dropped ...]\nlmnop"
    small = CappedBuffer(10)
    small.feed(b"hello")
    assert small.text() == "hello" and small.dropped == 0


def test_only_the_homes_of_ended_servers_of_this_user_and_namespace_are_removed(tmp_path: Path) -> None:
    ended = subprocess.Popen(["true"])
    ended.wait()
    namespace = pid_namespace()
    dead = tmp_path / f"{HOMES_PREFIX}{namespace}-{ended.pid}-a"
    (dead / "call-x" / "tmp").mkdir(parents=True)
    alive = tmp_path / f"{HOMES_PREFIX}{namespace}-{os.getpid()}-b"
    alive.mkdir()
    elsewhere = tmp_path / f"{HOMES_PREFIX}{namespace + 1}-{ended.pid}-c"  # a pid of another PID namespace
    elsewhere.mkdir()
    precious = tmp_path / "precious"
    precious.mkdir()
    link = tmp_path / f"{HOMES_PREFIX}{namespace}-{ended.pid}-d"
    link.symlink_to(precious)
    odd = tmp_path / f"{HOMES_PREFIX}not-a-pid"
    odd.mkdir()
    assert remove_stale_homes(tmp_path) == [dead]
    assert not dead.exists() and alive.is_dir() and elsewhere.is_dir() and odd.is_dir()
    assert link.is_symlink() and precious.is_dir()


def test_environment_is_complete_and_fixed(tmp_path: Path) -> None:
    env = child_environment(search_path="/usr/bin:/bin", home=tmp_path)
    assert env["PATH"] == "/usr/bin:/bin" and env["HOME"] == str(tmp_path)
    assert "LD_PRELOAD" not in env and "GIT_EXTERNAL_DIFF" not in env


def test_spawn_failure_and_timeout(tmp_path: Path) -> None:
    env = child_environment(search_path="/usr/bin:/bin", home=tmp_path)

    async def scenario() -> None:
        with pytest.raises(SpawnError):
            await run_process([str(tmp_path / "missing")], cwd=tmp_path, env=env, timeout=5, max_output_bytes=1024)
        result = await run_process(
            [sys.executable, "-c", "import time; print('x', flush=True); time.sleep(30)"],
            cwd=tmp_path,
            env=env,
            timeout=0.5,
            max_output_bytes=1024,
        )
        assert result.timed_out and result.exit_code is None and result.stdout.text() == "x\n"

    asyncio.run(scenario())


def test_service_maps_spawn_failure_to_execution_failed(tmp_path: Path) -> None:
    ops = ShellOps(ShellOpsSettings.load(), [tmp_path])
    try:
        with pytest.raises(ToolFailure) as caught:
            asyncio.run(ops._run([str(tmp_path / "missing")], tmp_path, timeout=5, max_output=1024))
        assert caught.value.code == ErrorCode.EXECUTION_FAILED
    finally:
        ops.close()


def test_search_path_entries_inside_the_roots_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    settings = ShellOpsSettings.load(search_path=f"{tmp_path / 'bin'}:/usr/bin:/bin")
    ops = ShellOps(settings, [tmp_path])
    try:
        assert ops.guard.search_path == "/usr/bin:/bin" and ops.env["PATH"] == "/usr/bin:/bin"
    finally:
        ops.close()


def test_an_output_flood_is_stopped_at_the_total_limit(tmp_path: Path) -> None:
    """`cat` of a 4 GiB sparse file: stopped once it has written the total limit, not after 4 GiB of zeros."""
    sparse = tmp_path / "big.bin"
    with sparse.open("wb") as handle:
        handle.truncate(4 * 1024**3)
    cat = "/bin/cat"
    env = child_environment(search_path="/usr/bin:/bin", home=tmp_path)
    result = asyncio.run(
        run_process(
            [cat, str(sparse)], cwd=tmp_path, env=env, timeout=60, max_output_bytes=1024, max_total_bytes=2 * 1024**2
        )
    )
    assert result.flooded and not result.timed_out and result.exit_code == -9
    assert 2 * 1024**2 < result.stdout.total < 64 * 1024**2  # read just past the limit, nowhere near 4 GiB
    assert len(result.stdout.raw()) == 1024  # head and tail kept as usual


def test_the_output_ring_keeps_the_last_bytes_with_absolute_offsets() -> None:
    ring = OutputRing(16)
    ring.feed(b"line one\nline two\n")  # 18 bytes: the first 2 fall out
    assert ring.total == 18 and ring.dropped == 2
    window = ring.window(0, 100)
    assert window.skipped == 2 and window.offset == 2 and window.data == b"ne one\nline two\n"
    assert window.next_offset == 18 and not window.more
    cut = ring.window(2, 10)  # more follows: cut after the last line break
    assert cut.data == b"ne one\n" and cut.next_offset == 9 and cut.more
    assert ring.window(18, 10).data == b"" and ring.window(50, 10).offset == 18


def test_a_window_never_ends_inside_a_character_still_being_written() -> None:
    ring = OutputRing(1024)
    ring.feed("é".encode()[:1])
    assert ring.window(0, 100).data == b""  # the rest of the character has not come yet
    ring.feed("é".encode()[1:] + b"x")
    assert ring.window(0, 100).text() == "éx"
    ring.feed("€".encode()[:2])
    assert ring.window(3, 100).data == b""
    ring.close()
    assert ring.window(3, 100).data == "€".encode()[:2]  # the stream ended: what there is


def test_descendants_are_found_from_proc(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import subprocess; subprocess.run(['sleep', '5'])"], start_new_session=True
    )
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not any(name == "sleep" for _, name in descendants(child.pid)):
            time.sleep(0.05)
        assert any(name == "sleep" for _, name in descendants(child.pid))
    finally:
        kill_group(child.pid)
        child.kill()
        child.wait()
