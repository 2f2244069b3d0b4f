"""shell_ops's tools through the official `mcp` client, in memory (one server per module; the programs it runs are
real sandboxed processes); test_stdio.py runs the same server over stdio."""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.in_memory import section_in_memory
from tests.processes import gone, unique_seconds
from tests.shell_ops.repos import git, make_repo
from tests.stdio import call, data_of, error_of

CAP = 8192

SPAWNER = """
import subprocess, sys, time
child = subprocess.Popen(["sleep", sys.argv[2]])
open(sys.argv[1], "w").write(str(child.pid))
print("started", flush=True)
time.sleep(60)
"""
SLEEPER = """
import time
for i in range(3):
    print("tick", i, flush=True)
    time.sleep(0.6)
"""
PRINT_ENV = "import json, os; print(json.dumps(dict(os.environ)))"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("shell-ops")
    root = make_repo(base / "root")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('app')\n")
    (root / "README.md").write_text("# demo\n")
    (root / "old_name.txt").write_text("line 1\nline 2\nline 3\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first commit", "-m", "body text")
    (root / "README.md").write_text("# demo\nmore\n")
    git(root, "commit", "-q", "-am", "second commit")
    git(root, "tag", "v1")
    # working state: one unstaged change, one staged rename, one untracked file
    (root / "src" / "app.py").write_text("print('app v2')\n")
    git(root, "mv", "old_name.txt", "new_name.txt")
    (root / "scratch.txt").write_text("untracked\n")
    (root / "tools").mkdir()
    (root / "tools" / "spawner.py").write_text(SPAWNER)
    (root / "tools" / "sleeper.py").write_text(SLEEPER)
    (root / "tools" / "print_env.py").write_text(PRINT_ENV)
    (root / "big.txt").write_text("HEAD-MARKER\n" + "x" * 100_000 + "\nTAIL-MARKER\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "package.json").write_text(
        json.dumps(
            {
                "name": "pkg",
                "version": "1.0.0",
                "scripts": {
                    "hello": "echo hello-from-script",
                    "prehello": "touch pre-hook-ran",
                    "posthello": "touch post-hook-ran",
                    "args": "node print_args.js",
                    "fail": "exit 3",
                },
            }
        )
    )
    (root / "pkg" / "print_args.js").write_text("console.log(JSON.stringify(process.argv.slice(2)))\n")
    (base / "plain").mkdir()
    (base / "second-root").mkdir()
    return root


@pytest.fixture(scope="module")
async def client(root: Path) -> AsyncIterator[Client]:
    env = {
        "MCP_SECTIONS_SHELL_OPS_MAX_OUTPUT_BYTES": str(CAP),
        "MCP_SECTIONS_SHELL_OPS_MAX_TIMEOUT_SECONDS": "120",
        "MCP_SECTIONS_CONFIG": str(root.parent / "absent.toml"),
        "MCP_SECTIONS_DATA_DIR": str(root.parent / "data"),
        "SUPER_SECRET_TOKEN": "do-not-leak",
    }
    (root.parent / "absent.toml").write_text("")
    second = str(root.parent / "second-root")
    async with section_in_memory("shell_ops", "--root", str(root), "--root", second, env=env) as connected:
        yield connected


async def fail(client: Client, tool: str, code: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    error_code, message = error_of(result)
    assert error_code == code, message
    assert result.structured_content is not None
    return result.structured_content


@pytest.mark.anyio
async def test_run_command_argv_string_cwd_and_exit_codes(client: Client, root: Path) -> None:
    listing = await call(client, "run_command", command=["ls", "src"])
    assert listing["exit_code"] == 0 and listing["stdout"] == "app.py\n"
    assert os.path.isabs(listing["executable"]) and listing["cwd"] == "."
    text = await call(client, "run_command", command="cat app.py", cwd="src")
    assert text["stdout"] == "print('app v2')\n" and text["cwd"] == "src"
    missing = await call(client, "run_command", command=["ls", "no-such-file"])
    assert missing["exit_code"] != 0 and "no-such-file" in missing["stderr"]
    quoted = await call(client, "run_command", command="grep -c 'line 2' new_name.txt")
    assert quoted["stdout"].strip() == "1"


@pytest.mark.anyio
async def test_child_environment_is_fixed(client: Client) -> None:
    data = await call(client, "run_command", command=["python3", "tools/print_env.py"])
    env = json.loads(data["stdout"])
    assert "SUPER_SECRET_TOKEN" not in env and not any(key.startswith("MCP_SECTIONS") for key in env)
    assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin"
    assert env["HOME"] != os.environ.get("HOME") and env["LANG"] == "C.UTF-8"
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_CONFIG_GLOBAL"] == "/dev/null"
    assert env["npm_config_ignore_scripts"] == "true"


@pytest.mark.anyio
async def test_progress_is_reported_for_long_runs(client: Client) -> None:
    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    result = await client.call_tool(
        "run_command", {"command": ["python3", "tools/sleeper.py"]}, progress_callback=on_progress
    )
    assert data_of(result)["stdout"].count("tick") == 3
    assert updates and updates[0][1] == 60 and "running" in (updates[0][2] or "")


@pytest.mark.anyio
async def test_timeout_kills_the_whole_process_group(client: Client, root: Path) -> None:
    pid_file = root / "grandchild.pid"
    seconds = unique_seconds(60)  # a `sleep` no other test starts
    started = time.monotonic()
    error = await fail(
        client,
        "run_command",
        "TIMEOUT",
        command=["python3", "tools/spawner.py", "grandchild.pid", seconds],
        timeout_seconds=1.2,
    )
    assert time.monotonic() - started < 10
    assert error["details"]["timed_out"] is True and "started" in error["details"]["stdout_tail"]
    assert pid_file.exists()  # the grandchild started (its pid is the sandbox's own: found by its command line)
    assert gone(["sleep", seconds], seconds=5), "the grandchild `sleep` survived the timeout"


@pytest.mark.anyio
async def test_output_is_capped_with_head_and_tail(client: Client, root: Path) -> None:
    data = await call(client, "run_command", command=["cat", "big.txt"])
    size = (root / "big.txt").stat().st_size
    assert data["stdout_truncated"] is True and data["stdout_dropped_bytes"] == size - CAP
    assert data["stdout"].startswith("HEAD-MARKER") and data["stdout"].rstrip().endswith("TAIL-MARKER")
    assert f"[... {size - CAP} bytes dropped ...]" in data["stdout"]
    assert data["stderr_truncated"] is False


@pytest.mark.anyio
async def test_timeout_above_the_maximum_is_refused(client: Client) -> None:
    await fail(client, "run_command", "MAX_LIMIT_EXCEEDED", command=["ls"], timeout_seconds=500)


@pytest.mark.anyio
async def test_run_npm_script(client: Client, root: Path) -> None:
    data = await call(client, "run_npm_script", script="hello", cwd="pkg")
    assert data["exit_code"] == 0 and "hello-from-script" in data["stdout"]
    assert data["script_text"] == "echo hello-from-script"
    assert not (root / "pkg" / "pre-hook-ran").exists() and not (root / "pkg" / "post-hook-ran").exists()
    hostile = ["; touch injected", "$(touch injected2)", "`touch injected3`", "a'b", "--flag"]
    echoed = await call(client, "run_npm_script", script="args", cwd="pkg", args=hostile)
    assert json.loads(echoed["stdout"].strip().splitlines()[-1]) == hostile
    assert not any((root / "pkg" / name).exists() for name in ("injected", "injected2", "injected3"))
    failed = await call(client, "run_npm_script", script="fail", cwd="pkg")
    assert failed["exit_code"] != 0
    message = (await fail(client, "run_npm_script", "NOT_FOUND", script="nope", cwd="pkg"))["error"]
    assert "hello" in message and "prehello" not in message
    await fail(client, "run_npm_script", "PERMISSION_DENIED", script="prehello", cwd="pkg")
    await fail(client, "run_npm_script", "NOT_FOUND", script="hello", cwd="src")


@pytest.mark.anyio
async def test_git_status(client: Client) -> None:
    data = await call(client, "git_status")
    assert data["branch"] == "main" and data["detached"] is False and len(data["commit"]) == 40
    assert data["clean"] is False and data["repository"] == "."
    entries = {entry["path"]: entry for entry in data["entries"]}
    assert entries["src/app.py"]["kind"] == "changed" and entries["src/app.py"]["worktree"] == "M"
    assert entries["new_name.txt"]["kind"] == "renamed" and entries["new_name.txt"]["orig_path"] == "old_name.txt"
    assert entries["scratch.txt"]["kind"] == "untracked"
    limited = await call(client, "git_status", include_untracked=False, max_entries=1)
    assert limited["truncated"] is True and len(limited["entries"]) == 1 and limited["total_entries"] == 2
    sub = await call(client, "git_status", cwd="src")
    assert sub["repository"] == "."


@pytest.mark.anyio
async def test_git_diff_modes(client: Client) -> None:
    unstaged = await call(client, "git_diff")
    assert [f["path"] for f in unstaged["files"]] == ["src/app.py"]
    assert "+print('app v2')" in unstaged["diff"] and unstaged["additions"] == 1 and unstaged["deletions"] == 1
    staged = await call(client, "git_diff", mode="staged")
    assert staged["files"][0]["path"] == "new_name.txt" and staged["files"][0]["old_path"] == "old_name.txt"
    against = await call(client, "git_diff", mode="ref", ref="HEAD~1", paths=["README.md"])
    assert [f["path"] for f in against["files"]] == ["README.md"] and len(against["base"]) == 40
    between = await call(client, "git_diff", mode="ref", ref="HEAD~1", to_ref="v1", stat_only=True)
    assert between["files_changed"] == 1 and between["diff"] == ""
    await fail(client, "git_diff", "INVALID_INPUT", mode="ref")
    await fail(client, "git_diff", "INVALID_INPUT", mode="ref", ref="HEAD~1..HEAD")
    await fail(client, "git_diff", "NOT_FOUND", mode="ref", ref="no-such-branch")


@pytest.mark.anyio
async def test_git_log(client: Client) -> None:
    data = await call(client, "git_log")
    assert [e["subject"] for e in data["entries"]] == ["second commit", "first commit"]
    assert data["entries"][1]["body"] == "body text" and data["entries"][0]["author_name"] == "Test Author"
    assert data["has_more"] is False and data["count"] == 2
    paged = await call(client, "git_log", max_count=1)
    assert paged["count"] == 1 and paged["has_more"] is True
    assert (await call(client, "git_log", ref="v1", skip=1))["entries"][0]["subject"] == "first commit"
    only = await call(client, "git_log", paths=["src/app.py"])
    assert [e["subject"] for e in only["entries"]] == ["first commit"]


@pytest.mark.anyio
async def test_git_tools_outside_a_repository(client: Client, root: Path) -> None:
    await fail(client, "git_status", "PERMISSION_DENIED", cwd=str(root.parent / "plain"))
    await fail(client, "git_log", "NOT_FOUND", cwd="no-such-dir")
    message = (await fail(client, "git_diff", "NOT_FOUND", cwd=str(root.parent / "second-root")))["error"]
    assert "not inside a git work tree" in message
    listing = await call(client, "run_command", command=["ls", "-a"], cwd=str(root.parent / "second-root"))
    assert listing["stdout"].split() == [".", ".."]


@pytest.mark.anyio
async def test_list_safe_commands(client: Client, root: Path) -> None:
    data = await call(client, "list_safe_commands")
    programs = {row["program"]: row for row in data["programs"]}
    assert {"ls", "git", "python3", "node", "npm"} <= set(programs)
    assert programs["git"]["executable"] and "probes" in programs["git"]["policy"]  # what remains in the sandbox
    assert "bash" in data["never_allowed"] and "env" in data["never_allowed"]
    assert data["roots"] == [str(root.resolve()), str((root.parent / "second-root").resolve())]
    assert data["max_output_bytes"] == CAP
    assert data["search_path"] == "/usr/local/bin:/usr/bin:/bin" and data["rules"]


@pytest.mark.anyio
async def test_git_tools_on_a_repository_without_commits(client: Client, root: Path) -> None:
    fresh = make_repo(root / "fresh")
    (fresh / "new.txt").write_text("x\n")
    status = await call(client, "git_status", cwd="fresh")
    assert status["commit"] is None and status["branch"] == "main" and status["repository"] == "fresh"
    assert (await call(client, "git_log", cwd="fresh"))["entries"] == []
    added = await call(client, "run_command", command=["git", "add", "new.txt"], cwd="fresh")
    assert added["exit_code"] == 0
    staged = await call(client, "git_diff", cwd="fresh", mode="staged")
    assert staged["files"] == [{"path": "new.txt", "old_path": None, "additions": 1, "deletions": 0, "binary": False}]
