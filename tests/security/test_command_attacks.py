"""Hostile inputs against shell_ops, over stdio: each is refused with an exact error code (or, for attacks
planted in a repository's config, provably runs nothing), and nothing outside the roots changes."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import stat
import subprocess
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.in_memory import section_in_memory
from tests.shell_ops.repos import GIT_IDENTITY, git, make_repo
from tests.stdio import call, data_of, error_of

MARKER = f"/tmp/PWNED-{uuid.uuid4().hex[:12]}"
HOOKS = ("pre-commit", "commit-msg", "post-commit", "post-checkout", "post-index-change", "reference-transaction")


def plant_hostile_repository(repo: Path, marker: str) -> None:
    """A repository whose config, attributes and hooks would each create `marker-<what>` if run."""
    make_repo(repo)
    (repo / "file.txt").write_text("original\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "initial")
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    hooks_dir = repo / "evil-hooks"
    for directory in (repo / ".git" / "hooks", hooks_dir):
        directory.mkdir(exist_ok=True)
        for hook in HOOKS:
            path = directory / hook
            path.write_text(f"#!/bin/sh\ntouch {marker}-hook-{hook}\n")
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
    (repo / ".git" / "extra.config").write_text(f'[core]\n\tpager = "touch {marker}-include-pager"\n')
    with (repo / ".git" / "config").open("a") as config:
        config.write(
            f"""
[core]
\tfsmonitor = "touch {marker}-fsmonitor; echo"
\tpager = "touch {marker}-pager"
\thooksPath = {hooks_dir}
\teditor = "touch {marker}-editor"
\tsshCommand = "touch {marker}-ssh"
[diff]
\texternal = "touch {marker}-diff-external"
[diff "evil"]
\ttextconv = "touch {marker}-textconv; cat"
\tcommand = "touch {marker}-diff-command"
[filter "evil"]
\tclean = "touch {marker}-clean; cat"
\tsmudge = "touch {marker}-smudge; cat"
[merge "evil"]
\tdriver = "touch {marker}-merge"
[gpg]
\tprogram = "touch {marker}-gpg"
[log]
\tshowSignature = true
[commit]
\tgpgSign = true
[pager]
\tlog = "touch {marker}-pager-log"
[alias]
\tst = "!touch {marker}-alias"
[include]
\tpath = extra.config
"""
        )
    (repo / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")
    (repo / "file.txt").write_text("changed\n")


def markers(prefix: str) -> list[str]:
    return sorted(glob.glob(prefix + "*"))


def tree_state(path: Path) -> dict[str, str]:
    """Every entry under `path` with a digest of its content (or link target), for before/after checks."""
    state: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            if full.is_symlink():
                state[str(full)] = "link:" + os.readlink(full)
            elif full.is_file():
                state[str(full)] = hashlib.sha256(full.read_bytes()).hexdigest()
            else:
                state[str(full)] = "dir"
    return state


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("command-attacks")
    root = make_repo(base / "root")
    (root / "README.md").write_text("readme\n")
    (root / "script.py").write_text("print('ok')\n")
    (root / ".env").write_text("API_KEY=secret\n")
    (root / "package.json").write_text(
        json.dumps(
            {
                "name": "victim",
                "version": "1.0.0",
                "scripts": {
                    "test": "echo test-ran",
                    "pretest": f"touch {MARKER}-npm-pretest",
                    "postinstall": f"touch {MARKER}-npm-postinstall",
                    "prepare": f"touch {MARKER}-npm-prepare",
                },
            }
        )
    )
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "initial")
    outside = base / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep me\n")
    fake_ls = outside / "ls"
    fake_ls.write_text(f"#!/bin/sh\ntouch {MARKER}-fake-ls\n")
    fake_ls.chmod(0o755)
    (root / "escape").symlink_to(outside)
    plant_hostile_repository(root / "hostile", MARKER)
    return {"base": base, "root": root, "outside": outside}


@pytest.fixture(scope="module")
async def client(world: dict[str, Path]) -> AsyncIterator[Client]:
    base = world["base"]
    (base / "absent.toml").write_text("")
    env = {
        "MCP_SECTIONS_CONFIG": str(base / "absent.toml"),
        "MCP_SECTIONS_DATA_DIR": str(base / "data"),
        "MCP_SECTIONS_SHELL_OPS_SANDBOX": "auto",
        "MCP_SECTIONS_SHELL_OPS_GIT_AUTHOR_NAME": GIT_IDENTITY["GIT_AUTHOR_NAME"],
        "MCP_SECTIONS_SHELL_OPS_GIT_AUTHOR_EMAIL": GIT_IDENTITY["GIT_AUTHOR_EMAIL"],
    }
    async with section_in_memory("shell_ops", "--root", str(world["root"]), env=env) as connected:
        yield connected
    for path in markers(MARKER):
        os.unlink(path)


@pytest.fixture(scope="module")
async def unconfined(world: dict[str, Path]) -> AsyncIterator[Client]:
    """The same server with `sandbox = "off"`: the argument rules are the only layer."""
    base = world["base"]
    env = {
        "MCP_SECTIONS_CONFIG": os.devnull,
        "MCP_SECTIONS_DATA_DIR": str(base / "data-off"),
        "MCP_SECTIONS_SHELL_OPS_SANDBOX": "off",
    }
    async with section_in_memory("shell_ops", "--root", str(world["root"]), env=env) as connected:
        yield connected


@pytest.fixture
def unchanged_outside(world: dict[str, Path]) -> Any:
    """Asserts after the test that nothing outside the root changed and no marker appeared."""
    before = {key: value for key, value in tree_state(world["base"]).items() if not _in_root(key, world)}
    yield
    after = {key: value for key, value in tree_state(world["base"]).items() if not _in_root(key, world)}
    assert after == before, "something outside the roots changed"
    assert markers(MARKER) == [], f"an attack ran: {markers(MARKER)}"


def _in_root(path: str, world: dict[str, Path]) -> bool:
    root = str(world["root"])
    data = str(world["base"] / "data")
    return path == root or path.startswith(root + os.sep) or path.startswith(data)


OUT = "{out}"  # replaced by the outside directory

# (id, tool arguments for run_command, expected error code): refused whether or not the OS sandbox runs, each by a rule
# the OS cannot take the place of (servers/shell_ops/README.md, section 2, lists them with their reasons).
RUN_COMMAND_ATTACKS: list[tuple[str, dict[str, Any], str]] = [
    ("semicolon", {"command": f"ls; touch {OUT}/pwned"}, "INVALID_INPUT"),
    ("and-and", {"command": f"ls && touch {OUT}/pwned"}, "INVALID_INPUT"),
    ("or-or", {"command": f"false || touch {OUT}/pwned"}, "INVALID_INPUT"),
    ("pipe", {"command": f"cat README.md | tee {OUT}/pwned"}, "INVALID_INPUT"),
    ("background", {"command": f"ls & touch {OUT}/pwned"}, "INVALID_INPUT"),
    ("newline", {"command": f"ls\ntouch {OUT}/pwned"}, "INVALID_INPUT"),
    ("carriage-return-unquoted", {"command": f"ls x\rtouch {OUT}/pwned"}, "INVALID_INPUT"),
    ("nul-byte", {"command": ["ls", "README.md\x00/etc/passwd"]}, "INVALID_INPUT"),
    ("command-substitution", {"command": f"echo $(touch {OUT}/pwned)"}, "INVALID_INPUT"),
    ("backticks", {"command": f"echo `touch {OUT}/pwned`"}, "INVALID_INPUT"),
    ("variable-expansion", {"command": "cat ${HOME}/.ssh/id_rsa"}, "INVALID_INPUT"),
    ("redirect-out", {"command": f"ls > {OUT}/pwned"}, "INVALID_INPUT"),
    ("redirect-argv", {"command": ["ls", f">{OUT}/pwned"]}, "INVALID_INPUT"),
    ("redirect-operator-argv", {"command": ["ls", ">", f"{OUT}/pwned"]}, "INVALID_INPUT"),
    ("env-assignment-ld-preload", {"command": "LD_PRELOAD=/tmp/evil.so ls"}, "INVALID_INPUT"),
    ("env-assignment-argv", {"command": ["PATH=/tmp", "ls"]}, "INVALID_INPUT"),
    ("env-argument-proxy", {"command": ["ls"], "env": {"HTTPS_PROXY": "http://127.0.0.1:1"}}, "PERMISSION_DENIED"),
    ("env-argument-path", {"command": ["ls"], "env": {"PATH": OUT}}, "PERMISSION_DENIED"),
    ("wrapper-env", {"command": ["env", "touch", f"{OUT}/pwned"]}, "PERMISSION_DENIED"),
    ("wrapper-xargs", {"command": ["xargs", "touch"]}, "PERMISSION_DENIED"),
    ("wrapper-sh", {"command": ["sh", "-c", f"touch {OUT}/pwned"]}, "PERMISSION_DENIED"),
    ("wrapper-bash-absolute", {"command": ["/bin/bash", "-c", "id"]}, "PERMISSION_DENIED"),
    ("wrapper-timeout", {"command": ["timeout", "5", "touch", f"{OUT}/pwned"]}, "PERMISSION_DENIED"),
    ("wrapper-nice", {"command": ["nice", "touch", f"{OUT}/pwned"]}, "PERMISSION_DENIED"),
    ("wrapper-sudo", {"command": ["sudo", "ls"]}, "PERMISSION_DENIED"),
    ("wrapper-busybox", {"command": ["busybox", "sh"]}, "PERMISSION_DENIED"),
    ("wrapper-npm-exec", {"command": ["npm", "exec", "--", "sh", "-c", "id"]}, "PERMISSION_DENIED"),
    ("awk-system", {"command": ["awk", f'BEGIN{{system("touch {OUT}/pwned")}}']}, "PERMISSION_DENIED"),
    ("not-on-allow-list", {"command": ["curl", "-o", "x", "http://example.com"]}, "PERMISSION_DENIED"),
    ("program-outside-fixed-path", {"command": [f"{OUT}/ls"]}, "PERMISSION_DENIED"),
    ("relative-program-path", {"command": ["escape/ls"]}, "PERMISSION_DENIED"),
    ("git-C-outside", {"command": ["git", "-C", "/", "status"]}, "PERMISSION_DENIED"),
    ("git-git-dir-outside", {"command": ["git", f"--git-dir={OUT}", "log"]}, "PERMISSION_DENIED"),
    ("git-show-secret-blob", {"command": ["git", "show", "HEAD:.env"]}, "PERMISSION_DENIED"),
    ("npm-script-shell", {"command": ["npm", "test", "--script-shell=/bin/bash"]}, "PERMISSION_DENIED"),
    ("secret-file", {"command": ["cat", ".env"]}, "PERMISSION_DENIED"),
    ("cwd-absolute-outside", {"command": ["ls"], "cwd": "/tmp"}, "PERMISSION_DENIED"),
    ("cwd-dotdot", {"command": ["ls"], "cwd": ".."}, "PERMISSION_DENIED"),
    ("cwd-symlink-escape", {"command": ["ls"], "cwd": "escape"}, "PERMISSION_DENIED"),
    ("timeout-above-max", {"command": ["ls"], "timeout_seconds": 99999}, "INVALID_INPUT"),
]

KEPT = "keep me"  # the outside file's content: it must never come back
# (id, run_command arguments): with the sandbox off the argument rules refuse each (PERMISSION_DENIED, they are the only
# layer there); inside the sandbox each runs, and the OS stops what the rule feared: nothing outside the roots is
# written (ENOENT: the outside does not exist there; EROFS for the system), the outside file is never read, no marker
# appears on the host (a program's /tmp is its own), and nothing reaches the network.
CONFINED_ATTACKS: list[tuple[str, dict[str, Any]]] = [
    ("python-c", {"command": ["python3", "-c", f"open('{OUT}/pwned','w')"]}),
    ("python-c-multiline", {"command": ["python3", "-c", f"import os\nos.makedirs('{OUT}/pwned-dir')"]}),
    ("python-c-reads-outside", {"command": ["python3", "-c", f"print(open('{OUT}/keep.txt').read())"]}),
    ("python-c-network", {"command": ["python3", "-c", "import socket; socket.create_connection(('1.1.1.1', 53), 3)"]}),
    ("python-m-pdb-c", {"command": ["python3", "-m", "pdb", "-c", f"!open('{OUT}/pwned','w')", "script.py"]}),
    ("python-m-timeit", {"command": ["python3", "-m", "timeit", f"open('{OUT}/pwned','w')"]}),
    ("python-stdin", {"command": ["python3", "-"]}),
    ("python-c-writes-system", {"command": ["python3", "-c", "open('/usr/pwned-by-test','w')"]}),
    ("node-e", {"command": ["node", "-e", f"require('fs').writeFileSync('{OUT}/pwned','')"]}),
    ("node-eval-long", {"command": ["node", f"--eval=require('fs').writeFileSync('{OUT}/pwned','')"]}),
    ("node-require", {"command": ["node", "-r", f"{OUT}/evil.js", "script.py"]}),
    ("find-exec", {"command": ["find", ".", "-maxdepth", "0", "-exec", "touch", f"{OUT}/pwned", "+"]}),
    ("find-execdir", {"command": ["find", ".", "-maxdepth", "0", "-execdir", "touch", f"{MARKER}-find", ";"]}),
    ("find-delete-outside", {"command": ["find", OUT, "-delete"]}),
    ("find-fprint-outside", {"command": ["find", ".", "-maxdepth", "0", "-fprint", f"{OUT}/pwned"]}),
    ("git-c-pager", {"command": ["git", "-c", f"core.pager=touch {OUT}/pwned", "-P", "log"]}),
    ("git-c-alias", {"command": ["git", "-c", f"alias.x=!touch {MARKER}-alias", "x"]}),
    ("git-c-fsmonitor", {"command": ["git", "-c", f"core.fsmonitor=touch {MARKER}-fsmonitor", "status"]}),
    ("git-upload-pack", {"command": ["git", "fetch", f"--upload-pack=touch {OUT}/pwned", "."]}),
    ("git-ls-remote-u", {"command": ["git", "ls-remote", "-u", f"touch {MARKER}-ls-remote", "."]}),
    ("git-diff-output", {"command": ["git", "diff", f"--output={OUT}/pwned"]}),
    ("git-diff-output-abbrev", {"command": ["git", "diff", f"--outp={OUT}/pwned"]}),
    ("git-log-ext-diff", {"command": ["git", "log", "-p", "-1", "--ext-diff"]}),
    ("git-exec-path", {"command": ["git", "--exec-path=escape", "status"]}),
    ("git-submodule-foreach", {"command": ["git", "submodule", "foreach", f"touch {OUT}/pwned"]}),
    ("git-alias-from-config", {"command": ["git", "st"], "cwd": "hostile"}),
    ("rg-pre", {"command": ["rg", "--pre", f"{OUT}/ls", "x"]}),
    # bubblewrap gets a caller's variables by `--setenv` (`Sandbox.spawning`): they reach the program, never the
    # launcher on the host; with the sandbox off (or sandbox-exec) the loader's are refused
    ("env-argument-ld-preload", {"command": ["ls"], "env": {"LD_PRELOAD": f"{OUT}/evil.so"}}),
    ("env-argument-tunables", {"command": ["ls"], "env": {"GLIBC_TUNABLES": "glibc.malloc.check=3"}}),
    ("sort-output", {"command": ["sort", "-o", f"{OUT}/pwned", "README.md"]}),
    ("sort-output-system", {"command": ["sort", "-o", "/etc/pwned-by-test", "README.md"]}),
    ("make-shell-override", {"command": ["make", "-f", "/dev/null", f"SHELL=/usr/bin/touch {OUT}/pwned"]}),
    ("npm-lifecycle-run", {"command": ["npm", "run", "postinstall"]}),
    ("path-absolute-outside", {"command": ["cat", f"{OUT}/keep.txt"]}),
    ("path-dotdot", {"command": ["cat", "../outside/keep.txt"]}),
    ("path-symlink-escape", {"command": ["cat", "escape/keep.txt"]}),
    ("grep-R-through-symlink", {"command": ["grep", "-R", "keep", "."]}),
    ("path-in-option-value", {"command": ["grep", f"--file={OUT}/keep.txt", "README.md"]}),
    ("path-attached-short", {"command": ["grep", "-f/etc/shadow", "README.md"]}),
]


def _fill(value: Any, outside: Path) -> Any:
    if isinstance(value, str):
        return value.replace(OUT, str(outside))
    if isinstance(value, list):
        return [_fill(item, outside) for item in value]
    if isinstance(value, dict):
        return {key: _fill(item, outside) for key, item in value.items()}
    return value


@pytest.mark.anyio
@pytest.mark.usefixtures("unchanged_outside")
@pytest.mark.parametrize(
    ("arguments", "code"), [(a, c) for _, a, c in RUN_COMMAND_ATTACKS], ids=[i for i, _, _ in RUN_COMMAND_ATTACKS]
)
async def test_run_command_attacks(
    client: Client, world: dict[str, Path], arguments: dict[str, Any], code: str
) -> None:
    result = await client.call_tool("run_command", _fill(arguments, world["outside"]))
    error_code, message = error_of(result)
    assert error_code == code, message
    assert not (world["outside"] / "pwned").exists()


@pytest.mark.anyio
@pytest.mark.usefixtures("unchanged_outside")
@pytest.mark.parametrize("arguments", [a for _, a in CONFINED_ATTACKS], ids=[i for i, _ in CONFINED_ATTACKS])
async def test_attacks_the_os_confines_run_confined(
    client: Client, unconfined: Client, world: dict[str, Path], arguments: dict[str, Any]
) -> None:
    """The argv rule that refused each of these is a rule of the sandbox-off layer only (issue #38): there it still
    refuses, and inside the sandbox the attack runs and its effect does not happen."""
    arguments = _fill(arguments, world["outside"])
    error_code, message = error_of(await unconfined.call_tool("run_command", arguments))
    assert error_code in ("PERMISSION_DENIED", "INVALID_INPUT"), message
    result = await client.call_tool("run_command", arguments)
    shown = str(result.structured_content) + " ".join(getattr(block, "text", "") for block in result.content)
    assert KEPT not in shown, shown
    assert not result.is_error, shown  # it ran: no argv rule stands in for the OS here
    assert result.structured_content is not None and result.structured_content["sandbox"] == "bubblewrap"
    assert not (world["outside"] / "pwned").exists() and not (world["outside"] / "pwned-dir").exists()
    assert (world["outside"] / "keep.txt").exists()  # find -delete did not reach it
    assert not Path("/usr/pwned-by-test").exists() and not Path("/etc/pwned-by-test").exists()


@pytest.mark.anyio
@pytest.mark.usefixtures("unchanged_outside")
async def test_strict_arguments_keep_a_read_only_allow_list_read_only(world: dict[str, Path]) -> None:
    """The sandbox lets a program write the roots: an operator whose allow-list is meant to be read-only (ls, cat,
    find, sort) sets strict_arguments, and every argument rule applies inside the sandbox too."""
    env = {
        "MCP_SECTIONS_CONFIG": os.devnull,
        "MCP_SECTIONS_DATA_DIR": str(world["base"] / "data-strict"),
        "MCP_SECTIONS_SHELL_OPS_STRICT_ARGUMENTS": "true",
        "MCP_SECTIONS_SHELL_OPS_SANDBOX": "auto",  # the unconfined server's environment lasts as long as it
        "MCP_SECTIONS_SHELL_OPS_ALLOWED_PROGRAMS": "ls,cat,grep,find,sort",
    }
    async with section_in_memory("shell_ops", "--root", str(world["root"]), env=env) as strict:
        for command in (
            ["find", ".", "-name", "README.md", "-delete"],
            ["sort", "-o", "README.md", "README.md"],
            ["find", ".", "-exec", "cat", "{}", "+"],
        ):
            error_code, message = error_of(await strict.call_tool("run_command", {"command": command}))
            assert error_code == "PERMISSION_DENIED", message
        listed = await call(strict, "run_command", command=["find", ".", "-name", "README.md"])
        assert listed["sandbox"] == "bubblewrap" and "README.md" in listed["stdout"]
    assert (world["root"] / "README.md").is_file()


@pytest.mark.anyio
@pytest.mark.usefixtures("unchanged_outside")
async def test_the_effects_fail_for_the_os_reason(client: Client, world: dict[str, Path]) -> None:
    """The refusals come from the OS: the outside does not exist (ENOENT), the system is read-only (EROFS), a new file
    in the sandbox's own root is gone with it, and there is no network."""
    outside = world["outside"]
    write = await call(client, "run_command", command=["python3", "-c", f"open('{outside}/pwned','w')"])
    assert write["exit_code"] != 0 and "FileNotFoundError" in write["stderr"], write
    system = await call(client, "run_command", command=["python3", "-c", "open('/usr/pwned-by-test','w')"])
    assert "Read-only file system" in system["stderr"], system
    target = f"/etc/pwned-{uuid.uuid4().hex[:8]}"  # /etc is the sandbox's own: a tmpfs gone with it
    sort = await call(client, "run_command", command=["sort", "-o", target, "README.md"])
    assert sort["exit_code"] == 0 and not Path(target).exists(), sort
    passwd = await call(client, "run_command", command=["sort", "-o", "/etc/passwd", "README.md"])
    assert "Read-only file system" in passwd["stderr"], passwd  # what the sandbox shows of /etc is read-only
    network = await call(
        client, "run_command", command=["python3", "-c", "import socket; socket.create_connection(('1.1.1.1', 53), 3)"]
    )
    assert network["exit_code"] != 0 and "Network is unreachable" in network["stderr"], network


@pytest.mark.anyio
@pytest.mark.usefixtures("unchanged_outside")
async def test_a_git_config_a_program_writes_runs_nothing_on_the_host(client: Client, world: dict[str, Path]) -> None:
    """`git config` writes are no longer refused: a sandboxed program could write `.git/config` anyway. What protects
    the host is the hardening of git's probes, which run outside the sandbox: they never run what the config names."""
    repo = world["root"]
    config = (repo / ".git" / "config").read_text()
    try:
        for key, value in (("core.fsmonitor", f"touch {MARKER}-config-fsmonitor; echo"), ("core.pager", "false")):
            written = await call(client, "run_command", command=["git", "config", key, value])
            assert written["exit_code"] == 0, written
        assert MARKER in (repo / ".git" / "config").read_text()
        await call(client, "git_status")
        await call(client, "run_command", command=["git", "status"])
        await call(client, "git_log", max_count=1)
        assert markers(MARKER) == []
    finally:
        (repo / ".git" / "config").write_text(config)


# (id, tool, arguments, expected error code)
OTHER_TOOL_ATTACKS: list[tuple[str, str, dict[str, Any], str]] = [
    ("diff-ref-option", "git_diff", {"mode": "ref", "ref": f"--output={OUT}/pwned"}, "INVALID_INPUT"),
    ("diff-ref-dash", "git_diff", {"mode": "ref", "ref": "-p"}, "INVALID_INPUT"),
    ("diff-to-ref-option", "git_diff", {"mode": "ref", "ref": "HEAD", "to_ref": "--ext-diff"}, "INVALID_INPUT"),
    ("diff-ref-range", "git_diff", {"mode": "ref", "ref": "HEAD..HEAD"}, "INVALID_INPUT"),
    ("diff-path-outside", "git_diff", {"paths": ["../outside/keep.txt"]}, "PERMISSION_DENIED"),
    ("log-ref-option", "git_log", {"ref": "--exec=id"}, "INVALID_INPUT"),
    ("log-ref-unknown", "git_log", {"ref": "no-such-ref"}, "NOT_FOUND"),
    ("log-path-symlink", "git_log", {"paths": ["escape/keep.txt"]}, "PERMISSION_DENIED"),
    ("status-cwd-outside", "git_status", {"cwd": OUT}, "PERMISSION_DENIED"),
    ("status-cwd-symlink", "git_status", {"cwd": "escape"}, "PERMISSION_DENIED"),
    ("npm-postinstall", "run_npm_script", {"script": "postinstall"}, "PERMISSION_DENIED"),
    ("npm-prepare", "run_npm_script", {"script": "prepare"}, "PERMISSION_DENIED"),
    ("npm-pre-hook", "run_npm_script", {"script": "pretest"}, "PERMISSION_DENIED"),
    ("npm-option-as-name", "run_npm_script", {"script": "--script-shell=/bin/bash"}, "INVALID_INPUT"),
    ("npm-cwd-outside", "run_npm_script", {"script": "test", "cwd": OUT}, "PERMISSION_DENIED"),
    ("npm-arg-nul", "run_npm_script", {"script": "test", "args": ["a\x00b"]}, "INVALID_INPUT"),
]


@pytest.mark.anyio
@pytest.mark.usefixtures("unchanged_outside")
@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [(t, a, c) for _, t, a, c in OTHER_TOOL_ATTACKS],
    ids=[i for i, _, _, _ in OTHER_TOOL_ATTACKS],
)
async def test_other_tool_attacks(
    client: Client, world: dict[str, Path], tool: str, arguments: dict[str, Any], code: str
) -> None:
    error_code, message = error_of(await client.call_tool(tool, _fill(arguments, world["outside"])))
    assert error_code == code, message


@pytest.mark.anyio
@pytest.mark.usefixtures("unchanged_outside")
async def test_npm_test_runs_without_its_pre_hook(client: Client) -> None:
    data = data_of(await client.call_tool("run_npm_script", {"script": "test"}))
    assert "test-ran" in data["stdout"]
    via_command = data_of(await client.call_tool("run_command", {"command": ["npm", "test"]}))
    assert "test-ran" in via_command["stdout"]


def test_control_hostile_repository_is_really_hostile(tmp_path: Path) -> None:
    """Without the hardening, plain git runs the planted programs: the checks below are meaningful."""
    prefix = f"/tmp/PWNED-control-{uuid.uuid4().hex[:12]}"
    repo = tmp_path / "control"
    plant_hostile_repository(repo, prefix)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **GIT_IDENTITY}
    try:
        for args in (["status"], ["diff"], ["commit", "-qam", "x"]):
            subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, check=False)
        ran = {path.removeprefix(prefix + "-") for path in markers(prefix)}
        assert {"fsmonitor", "diff-command", "clean", "hook-pre-commit"} <= ran, ran
    finally:
        for path in markers(prefix):
            os.unlink(path)


HOSTILE_GIT_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("git_status", {"cwd": "hostile"}),
    ("git_status", {"cwd": "hostile", "include_ignored": True}),
    ("git_diff", {"cwd": "hostile"}),
    ("git_diff", {"cwd": "hostile", "mode": "ref", "ref": "HEAD~1"}),
    ("git_log", {"cwd": "hostile"}),
    ("run_command", {"cwd": "hostile", "command": ["git", "status"]}),
    ("run_command", {"cwd": "hostile", "command": ["git", "diff"]}),
    ("run_command", {"cwd": "hostile", "command": ["git", "log", "-p", "-2"]}),
    ("run_command", {"cwd": "hostile", "command": ["git", "log", "--show-signature", "-1"]}),
    ("run_command", {"cwd": "hostile", "command": ["git", "show", "HEAD~1"]}),
    ("run_command", {"cwd": "hostile", "command": ["git", "add", "-A"]}),
    ("run_command", {"cwd": "hostile", "command": ["git", "diff", "--cached"]}),
    ("git_diff", {"cwd": "hostile", "mode": "staged"}),
    ("run_command", {"cwd": "hostile", "command": ["git", "commit", "-m", "hostile commit"]}),
    ("run_command", {"cwd": "hostile", "command": ["git", "checkout", "HEAD~1", "--", "file.txt"]}),
    ("run_command", {"cwd": "hostile", "command": ["git", "stash"]}),
    ("run_command", {"cwd": "hostile", "command": ["git", "stash", "pop"]}),
]


@pytest.mark.anyio
@pytest.mark.usefixtures("unchanged_outside")
async def test_hostile_repository_config_runs_nothing(client: Client, world: dict[str, Path]) -> None:
    for tool, arguments in HOSTILE_GIT_CALLS:
        result = await client.call_tool(tool, arguments)
        assert markers(MARKER) == [], f"{tool} {arguments} ran {markers(MARKER)}"
        if tool != "run_command" or arguments["command"][1] not in ("stash",):
            assert not result.is_error, (tool, arguments, result.structured_content)
    log = data_of(await client.call_tool("git_log", {"cwd": "hostile", "max_count": 1}))
    assert log["entries"][0]["subject"] == "hostile commit"


@pytest.mark.anyio
@pytest.mark.usefixtures("unchanged_outside")
async def test_repository_outside_the_roots_is_refused(client: Client, world: dict[str, Path]) -> None:
    """A `.git` file inside the root pointing at a git directory outside it is not followed."""
    inner = world["root"] / "gitfile-repo"
    inner.mkdir()
    outside_git = world["base"] / "outside-gitdir"
    shutil.copytree(world["root"] / ".git", outside_git)
    (inner / ".git").write_text(f"gitdir: {outside_git}\n")
    try:
        error_code, _ = error_of(await client.call_tool("git_status", {"cwd": "gitfile-repo"}))
        assert error_code == "PERMISSION_DENIED"
        error_code, _ = error_of(
            await client.call_tool("run_command", {"cwd": "gitfile-repo", "command": ["git", "log"]})
        )
        assert error_code == "PERMISSION_DENIED"
    finally:
        shutil.rmtree(inner)
        shutil.rmtree(outside_git)


def test_attack_count() -> None:
    assert len(RUN_COMMAND_ATTACKS) + len(CONFINED_ATTACKS) + len(OTHER_TOOL_ATTACKS) + len(HOSTILE_GIT_CALLS) >= 100
