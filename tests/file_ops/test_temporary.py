"""Temporary files in the user's directories: a server killed with SIGKILL during a write leaves none; a dead
writer's named temporary file is swept by the next write there, a live writer's never."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mcp_sections.servers.file_ops import temporary
from tests.processes import RawServer

PREFIX = ".mcp-sections-tmp-"  # the name a temporary file carries, from before this test and after


def leftovers(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.startswith(PREFIX))


def writing_now(pid: int, directory: Path) -> bool:
    """Whether the server has a file of `directory` open that is not one of its entries yet (a temporary file,
    named or anonymous: `/proc/<pid>/fd` shows an O_TMPFILE as `<directory>/#<inode> (deleted)`)."""
    if leftovers(directory):
        return True
    try:
        descriptors = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for descriptor in descriptors:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{descriptor}")
        except OSError:
            continue
        if target.startswith(f"{directory}/#") or PREFIX in target:
            return True
    return False


def test_a_server_killed_during_a_large_write_leaves_nothing_behind(tmp_path: Path) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    (root / "out").mkdir(parents=True)
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    env = {"MCP_SECTIONS_CONFIG": str(tmp_path / "config.toml"), "MCP_SECTIONS_ROOTS": "", "MCP_SECTIONS_WARM_UP": "0"}
    arguments = ("file_ops", "--root", str(root), "--data-dir", str(data))
    content = "0123456789abcdef" * (12 * 1024 * 1024 // 16)  # 12 MiB: the write takes some milliseconds
    killed = 0
    for attempt in range(1, 9):  # the kill must land while the file is being written; retried when it did not
        with RawServer(arguments, env=env) as server:
            server.initialize()
            server.call_tool(attempt, "write_file", {"path": f"out/big{attempt}.txt", "content": content})
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and attempt not in server.tool_results():
                if writing_now(server.process.pid, root / "out"):
                    os.kill(server.process.pid, signal.SIGKILL)
                    server.process.wait(timeout=10)
                    killed += 1
                    break
                time.sleep(0.0002)
        assert leftovers(root / "out") == [], f"attempt {attempt}: a killed write left a temporary file"
        if killed >= 2:
            break
    assert killed >= 2, "the kill never landed during a write"
    with RawServer(arguments, env=env) as server:  # the next server, and its next write there
        server.initialize()
        server.call_tool(100, "write_file", {"path": "out/small.txt", "content": "small\n"})
        server.wait_for(lambda responses: 100 in responses)
        assert not server.tool_results()[100].get("isError")
    assert leftovers(root / "out") == []
    assert {name for name in os.listdir(root / "out") if not name.startswith("big")} == {"small.txt"}


HOLDER = """
import os, sys
from mcp_sections.servers.file_ops import temporary
temporary._O_TMPFILE = 0  # a file system without O_TMPFILE: the file is named from the start
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
with temporary.staged_file(fd) as staged:
    os.write(staged.fd, b"half written")
    print(staged.name, flush=True)
    sys.stdin.read()
"""


def named_writer(directory: Path) -> tuple[subprocess.Popen[str], str]:
    """A process that writes a named temporary file in `directory` and waits: (the process, the file's name)."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(directory)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    name = process.stdout.readline().strip()
    assert name.startswith(PREFIX) and (directory / name).exists()
    return process, name


WRITER = """
import sys
from pathlib import Path
from mcp_sections.servers.file_ops import writing
from mcp_sections.shared.confinement.guards.paths import PathGuard
writing.atomic_write(PathGuard([sys.argv[1]]), Path(sys.argv[2]), b"next\\n")
"""


def next_write(root: Path, target: Path) -> None:
    """A write by another process, as the next server's would be (this one may have swept the directory lately)."""
    subprocess.run([sys.executable, "-c", WRITER, str(root), str(target)], check=True, timeout=60)


def test_a_dead_writers_named_file_is_swept_by_the_next_write_a_live_ones_is_kept(tmp_path: Path) -> None:
    directory = tmp_path / "root" / "d"
    directory.mkdir(parents=True)
    dead, dead_name = named_writer(directory)
    alive, alive_name = named_writer(directory)
    try:
        dead.kill()
        dead.wait(timeout=10)
        assert (directory / dead_name).exists()  # SIGKILL: nothing of the writer removed it
        old = directory / f"{PREFIX}0123456789abcdef"  # a name from before the writer's identity was in it
        old.write_bytes(b"x")
        recent = directory / f"{PREFIX}fedcba9876543210"
        recent.write_bytes(b"x")
        hour_ago = time.time() - temporary.UNVERIFIABLE_STALE_SECONDS - 60
        os.utime(old, (hour_ago, hour_ago))
        next_write(tmp_path / "root", directory / "next.txt")
        assert sorted(os.listdir(directory)) == sorted(["next.txt", alive_name, recent.name])
    finally:
        alive.kill()
        alive.wait(timeout=10)
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert temporary.sweep(fd, force=True) == [alive_name]
    finally:
        os.close(fd)


def test_a_reused_pid_is_not_taken_for_the_writer() -> None:
    mine = temporary.temp_name()
    assert not temporary.is_stale(mine, time.time())
    boot, namespace, pid, started = mine[len(PREFIX) :].split("-")[:4]
    other_start = f"{PREFIX}{boot}-{namespace}-{pid}-{int(started) + 1}-00000000"
    assert temporary.is_stale(other_start, time.time())  # the same pid, another process: its writer is gone
    elsewhere = f"{PREFIX}{boot}-{int(namespace) + 1}-{pid}-{started}-00000000"
    assert not temporary.is_stale(elsewhere, time.time())  # another PID namespace: only by age
    assert temporary.is_stale(elsewhere, time.time() - temporary.UNVERIFIABLE_STALE_SECONDS - 1)
    assert not temporary.is_stale("notes.txt", 0)
