"""Issue #11's attack classes, through the real stdio servers: each class is refused as a class (not one program at
a time), secrets that come back through git or file contents are masked, and writes cannot plant git state.

shell_ops runs twice: with `sandbox = "off"`, which shows that the argument layer holds on its own, and with its OS
sandbox, where only the classes the OS cannot confine stay refused and the others run with nothing to reach (the
sandbox itself is tested in test_sandbox.py).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_sections.shared.confinement.secrets.masking import MASK
from tests.in_memory import section_in_memory
from tests.shell_ops.repos import GIT_IDENTITY, git, make_repo
from tests.stdio import call, data_of, error_of, fail

API_KEY = "sk-live-0f9e8d7c6b5a49382716"
DB_PASSWORD = "hunter2-correct-horse"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
OUTSIDE_TEXT = "outside-canary-5d1e"
HAVE_BWRAP = shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin") is not None


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("classes")
    root, outside = base / "root", base / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text(OUTSIDE_TEXT + "\n")
    (outside / "Makefile").write_text("all:\n\t@echo made-outside\n")
    make_repo(root)
    (root / "sub").mkdir()
    (root / "sub" / "note.txt").write_text("note\n")
    (root / "README.md").write_text("readme\n")
    (root / "list").write_text("../outside/keep.txt\0")
    (root / ".env").write_text(f"API_KEY={API_KEY}\nDEBUG=1\n")
    (root / "settings.py").write_text(f'DATABASE = "main"\npassword = "{DB_PASSWORD}"\nTOKEN = "{GITHUB_TOKEN}"\n')
    git(root, "add", "-f", ".env", "settings.py", "README.md")
    git(root, "commit", "-q", "-m", "config")
    (root / "escape").symlink_to(outside)
    os.link(outside / "keep.txt", root / "linked-outside.txt")
    os.link(root / ".env", root / "env-copy.txt")
    borrowed = make_repo(root / "borrower")
    (borrowed / ".git" / "objects" / "info" / "alternates").write_text(str(outside / "objects") + "\n")
    return {"base": base, "root": root, "outside": outside}


@pytest.fixture(scope="module", params=["bubblewrap", "off"])
async def shell(request: pytest.FixtureRequest, world: dict[str, Path]) -> AsyncIterator[Client]:
    if request.param == "bubblewrap" and not HAVE_BWRAP:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")
    (world["base"] / "empty.toml").touch()
    env = {
        "MCP_SECTIONS_CONFIG": str(world["base"] / "empty.toml"),
        "MCP_SECTIONS_DATA_DIR": str(world["base"] / f"data-{request.param}"),
        "MCP_SECTIONS_SHELL_OPS_SANDBOX": "auto" if request.param == "bubblewrap" else "off",
        "MCP_SECTIONS_SHELL_OPS_GIT_AUTHOR_NAME": GIT_IDENTITY["GIT_AUTHOR_NAME"],
        "MCP_SECTIONS_SHELL_OPS_GIT_AUTHOR_EMAIL": GIT_IDENTITY["GIT_AUTHOR_EMAIL"],
    }
    async with section_in_memory("shell_ops", "--root", str(world["root"]), env=env) as client:
        yield client


@pytest.fixture(scope="module")
async def files(world: dict[str, Path]) -> AsyncIterator[Client]:
    env = {"MCP_SECTIONS_DATA_DIR": str(world["base"] / "data-files")}
    async with section_in_memory("file_ops", "--root", str(world["root"]), env=env) as client:
        yield client


PD = "PERMISSION_DENIED"
# (id, run_command arguments): every one must be refused with PERMISSION_DENIED before anything runs.
CLASS_ATTACKS: list[tuple[str, dict[str, Any]]] = [
    # option values attached to short options, and name=value values
    ("attached-grep-f-secret", {"command": ["grep", "-qf.env", "README.md"]}),
    ("attached-grep-f-outside", {"command": ["grep", "-qf../outside/keep.txt", "README.md"]}),
    ("attached-cluster-dotdot", {"command": ["grep", "-rnf..", "x"]}),
    ("attached-sort-o", {"command": ["sort", "-uo../outside/out.txt", "README.md"]}),
    ("python-X-pycache-prefix", {"command": ["python3", "-X", "pycache_prefix=../outside/cache", "-m", "pytest"]}),
    ("python-X-attached", {"command": ["python3", "-Xpycache_prefix=/tmp/elsewhere", "-m", "pytest"]}),
    # options that move the base directory
    ("git-C-parent", {"command": ["git", "-C", "..", "status"]}),
    ("git-C-attached", {"command": ["git", "-C..", "status"]}),
    ("git-git-dir", {"command": ["git", "--git-dir=../outside", "log"]}),
    ("git-work-tree", {"command": ["git", "--work-tree", "..", "status"]}),
    ("git-C-chain", {"command": ["git", "-C", "..", "-C", "..", "status"], "cwd": "sub"}),
    ("make-C-then-relative", {"command": ["make", "-C", "..", "-f", "../outside/Makefile"], "cwd": "sub"}),
    ("make-directory-long", {"command": ["make", "--directory=..", "-f", "../outside/Makefile"], "cwd": "sub"}),
    ("make-C-abbreviated", {"command": ["make", "--dir=..", "--dir=..", "all"], "cwd": "sub"}),
    # options that read the paths to work on from a file
    ("wc-files0-from", {"command": ["wc", "--files0-from=list"]}),
    ("du-files0-from", {"command": ["du", "--files0-from", "list"]}),
    ("sort-files0-from", {"command": ["sort", "--files0-from=list"]}),
    ("find-files0-from", {"command": ["find", "-files0-from", "list"]}),
    ("git-pathspec-from-file", {"command": ["git", "add", "--pathspec-from-file=list"]}),
    # flags that follow symbolic links
    ("ls-L", {"command": ["ls", "-L", "."]}),
    ("ls-dereference", {"command": ["ls", "--dereference", "."]}),
    ("du-L", {"command": ["du", "-sL", "."]}),
    ("du-dereference-args", {"command": ["du", "-D", "."]}),
    ("stat-L", {"command": ["stat", "-L", "README.md"]}),
    ("find-L", {"command": ["find", "-L", ".", "-name", "keep.txt"]}),
    ("find-follow", {"command": ["find", ".", "-follow"]}),
    ("grep-R", {"command": ["grep", "-Rn", "canary", "."]}),
    ("rg-follow", {"command": ["rg", "--follow", "canary"]}),
    # git state that points outside
    ("git-apply-unsafe-paths", {"command": ["git", "apply", "--unsafe-paths", "patch.diff"]}),
    ("git-alternates-outside", {"command": ["git", "log", "-1"], "cwd": "borrower"}),
    # secrets named as pathspecs of git's history (the file may be gone from the work tree)
    ("git-log-pathspec-secret", {"command": ["git", "log", "-p", "--", "*.env"]}),
    ("git-grep-pathspec-secret", {"command": ["git", "grep", "API", "HEAD", "--", ":(glob)**/.env"]}),
]


#: The classes that stay refused inside the sandbox too, each for a reason the OS cannot take over: git's repository
#: options and state lead the hardened probes, which run outside the sandbox; a secret is named in git's history (the
#: sandbox hides the file, not its copies in the objects) or by name in the roots (it would read as an empty file).
REFUSED_IN_THE_SANDBOX = frozenset(
    [
        *("attached-grep-f-secret", "git-C-parent", "git-C-attached", "git-git-dir", "git-work-tree", "git-C-chain"),
        *("git-alternates-outside", "git-log-pathspec-secret", "git-grep-pathspec-secret"),
    ]
)


@pytest.mark.anyio
@pytest.mark.parametrize(("attack", "arguments"), CLASS_ATTACKS, ids=[i for i, _ in CLASS_ATTACKS])
async def test_each_class_is_refused(
    request: pytest.FixtureRequest, shell: Client, world: dict[str, Path], attack: str, arguments: dict[str, Any]
) -> None:
    """With the sandbox off every class is refused (the argument layer holds on its own); inside the sandbox the classes
    the OS confines run, and what they reach for is not there: the outside file never comes back, nothing is written
    outside (issue #38)."""
    result = await shell.call_tool("run_command", arguments)
    if request.node.callspec.params["shell"] == "off" or attack in REFUSED_IN_THE_SANDBOX:
        code, message = error_of(result)
        assert code == PD, message
    else:
        shown = str(result.structured_content) + " ".join(getattr(block, "text", "") for block in result.content)
        assert not result.is_error, shown
        # `linked-outside.txt` is a hard link the fixture made into the root: a recursive read finds it with or without
        # -R (no program can make one: it cannot see the outside); the link `escape/` leads to nothing.
        reached = [
            line for line in re.split(r"\\n|\n", shown) if OUTSIDE_TEXT in line and "linked-outside.txt" not in line
        ]
        assert reached == [] and "made-outside" not in shown and API_KEY not in shown, shown
    assert not (world["outside"] / "out.txt").exists() and not (world["outside"] / "cache").exists()


@pytest.mark.anyio
@pytest.mark.parametrize(
    "command",
    [["ls", "-la"], ["du", "-sh", "."], ["git", "-C", "sub", "status"], ["make", "-C", "sub", "--version"]],
    ids=["ls-la", "du-sh", "git-C-inside", "make-C-inside"],
)
async def test_ordinary_use_of_the_same_programs_still_runs(shell: Client, command: list[str]) -> None:
    result = await call(shell, "run_command", command=command)
    assert result["exit_code"] == 0, result


@pytest.mark.anyio
async def test_git_status_refuses_a_repository_that_borrows_objects_from_outside(shell: Client) -> None:
    message = await fail(shell, "git_status", PD, cwd="borrower")
    assert "alternates" in message


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("command", "secret"),
    [
        (["git", "log", "-p", "-1"], API_KEY),
        (["git", "log", "-p", "-1"], DB_PASSWORD),
        (["git", "grep", "-n", "API_KEY"], API_KEY),
        (["git", "grep", "-n", "TOKEN", "HEAD"], GITHUB_TOKEN),
        (["git", "show", "HEAD:settings.py"], DB_PASSWORD),
        (["cat", "settings.py"], GITHUB_TOKEN),
        (["grep", "-rn", "password", "."], DB_PASSWORD),
    ],
)
async def test_secrets_read_back_through_git_or_files_are_masked(
    shell: Client, world: dict[str, Path], command: list[str], secret: str
) -> None:
    result = await shell.call_tool("run_command", {"command": command})
    output = data_of(result)["stdout"]
    assert MASK in output and secret not in output, output
    assert all(secret not in block.text for block in result.content if hasattr(block, "text"))


@pytest.mark.anyio
async def test_git_cat_file_of_the_committed_env_blob_is_masked(shell: Client, world: dict[str, Path]) -> None:
    blob = git(world["root"], "rev-parse", "HEAD:.env").strip()
    output = (await call(shell, "run_command", command=["git", "cat-file", "-p", blob]))["stdout"]
    assert output.startswith(f"API_KEY={MASK}") and "DEBUG=1" in output and API_KEY not in output


@pytest.mark.anyio
async def test_git_log_tool_masks_the_patch(shell: Client) -> None:
    result = await shell.call_tool("git_diff", {"mode": "ref", "ref": "HEAD~0"})
    assert API_KEY not in str(result.structured_content)


@pytest.mark.anyio
async def test_file_ops_masks_secret_values_in_reads_and_search(files: Client) -> None:
    read = await call(files, "read_file", path="settings.py")
    assert DB_PASSWORD not in str(read) and GITHUB_TOKEN not in str(read) and MASK in str(read)
    assert 'DATABASE = "main"' in str(read)
    found = await call(files, "search_files", pattern="password")
    assert DB_PASSWORD not in str(found) and MASK in str(found)


@pytest.mark.anyio
async def test_writes_cannot_put_the_mask_over_the_real_secret(files: Client, world: dict[str, Path]) -> None:
    shown = (await call(files, "read_file", path="settings.py"))["content"]
    await fail(files, "write_file", "VALIDATION_FAILED", path="settings.py", content=shown + "# more\n")
    masked_line = next(line for line in shown.splitlines() if line.startswith("password"))
    message = await fail(
        files,
        "edit_file",
        "VALIDATION_FAILED",
        path="settings.py",
        edits=[{"old_text": masked_line, "new_text": masked_line + "  # rotated"}],
    )
    assert MASK in message
    await call(files, "edit_file", path="settings.py", edits=[{"old_text": '"main"', "new_text": '"replica"'}])
    assert DB_PASSWORD in (world["root"] / "settings.py").read_text()  # the real value is intact


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("write_file", {"path": ".git/config", "content": "[core]\n\tfsmonitor = touch /tmp/x\n", "overwrite": True}),
        ("write_file", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\nid\n"}),
        ("write_file", {"path": ".git/objects/info/alternates", "content": "/etc\n", "overwrite": True}),
        ("write_file", {"path": ".git/info/attributes", "content": "* filter=evil\n"}),
        ("create_directory", {"path": ".git/hooks/more"}),
        ("copy_file", {"source": "README.md", "destination": ".git/hooks/post-checkout"}),
        ("move_file", {"source": "sub/note.txt", "destination": ".git/description"}),
        ("write_file", {"path": "borrower/.git/config", "content": "[include]\n\tpath = /etc/gitconfig\n"}),
    ],
    ids=["config", "hook", "alternates", "info-attributes", "hooks-dir", "copy-hook", "move-into", "nested-repo"],
)
async def test_git_internals_are_not_writable_through_file_ops(
    files: Client, world: dict[str, Path], tool: str, arguments: dict[str, Any]
) -> None:
    config_before = (world["root"] / ".git" / "config").read_text()
    await fail(files, tool, PD, **arguments)
    assert (world["root"] / ".git" / "config").read_text() == config_before
    assert not (world["root"] / ".git" / "hooks" / "pre-commit").exists()


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["linked-outside.txt", "env-copy.txt"])
async def test_hard_links_to_outside_or_protected_files_are_not_read(files: Client, path: str) -> None:
    message = await fail(files, "read_file", PD, path=path)
    assert "hard link" in message
    found = await call(files, "search_files", pattern=OUTSIDE_TEXT)
    assert OUTSIDE_TEXT not in str(found.get("matches", found))
