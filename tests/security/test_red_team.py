"""Red-team round: what a prompt-injected agent tried through the real MCP interface, over stdio.

Each hole found is pinned by a test that failed before its fix (in the guard, not the tool):

- git's help viewer: `git status --help` / `git --help status` / `git config --help` become `git help X`,
  which runs the viewer the *repository* config names (`man.viewer` + `man.<tool>.cmd`): a command;
- git config includes: `include.path = /anywhere/creds.ini` in `.git/config` made `git config --get` print
  the values of a file outside the roots (any INI file: `~/.pypirc`'s password) or of a protected file;
- git blob syntax: `git show HEAD:.env` read a secret that the deny globs refuse by name;
- jq modules: `import "../x" as $x {search: "/anywhere"}` read any `.json` outside the roots, `include`
  quoted lines of any `.jq` file in its syntax error;
- ruff: a project config's `cache-dir` wrote outside the roots, and `extend = "/outside/file"` made ruff quote
  that file's lines in its parse error;
- the gateway's get_project_info read manifests and `.git/HEAD` through symlinks and `gitdir:` files (and
  the parent folders of the roots) outside the roots.

The parametrised lists at the end pin attempts that already held and that the older hostile tests lack.

Since issue #38 the OS sandbox is the boundary: an argument rule that only duplicated what it confines applies with
`sandbox = "off"` alone, where the rules are the only layer (servers/shell_ops/README.md, section 2). Each attack
such a rule refused is therefore run twice: refused by the `unconfined` server, and run by the sandboxed `shell`,
where the OS stops its effect (nothing outside the roots read or written, no marker on the host). The attacks a
remaining rule refuses are refused by both.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.in_memory import gateway_in_memory, section_in_memory
from tests.processes import running_with
from tests.security.test_command_attacks import markers, tree_state
from tests.shell_ops.repos import GIT_IDENTITY, git, make_repo
from tests.stdio import data_of, error_of

MARKER = f"/tmp/PWNED-red-{uuid.uuid4().hex[:12]}"
SECRET = f"RED-TEAM-SECRET-{uuid.uuid4().hex[:8]}"
PD, II = "PERMISSION_DENIED", "INVALID_INPUT"
KEPT = "keep me"  # the outside keep.txt: it must never come back
VENV_BIN = Path(sys.executable).parent
SEARCH_PATH = f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin"  # ruff lives next to the test interpreter


VIEWER_RAN = "the-repository-viewer-ran"


def plant_help_viewer(repo: Path, marker: str) -> None:
    """A repository whose config makes `git help` run a command (man.viewer + man.<tool>.cmd): it touches the marker
    and says so."""
    make_repo(repo)
    with (repo / ".git" / "config").open("a") as config:
        config.write('[help]\n\tformat = man\n[man]\n\tviewer = evil\n[man "evil"]\n')
        config.write(f'\tcmd = "touch {marker}-man; echo {VIEWER_RAN};"\n')


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("red-team").resolve()
    root, outside = base / "root", base / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text(f"{KEPT}\n")
    (outside / "creds.ini").write_text(f"[pypi]\n\tpassword = {SECRET}\n")
    (outside / "leak.json").write_text(json.dumps({"secret": SECRET}))
    (outside / "mod.jq").write_text(f'def s: "{SECRET}";\n')
    (outside / "bad.jq").write_text(f"{SECRET} not jq\n")
    (outside / "ruff-base.toml").write_text(f"line-length = 100\n{SECRET} = = =\n")
    make_repo(root)
    (root / "README.md").write_text("readme\n")
    (root / ".env").write_text(f"API_KEY={SECRET}\n")
    (root / "data.json").write_text('{"include": ["src"], "name": "ok"}\n')
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "initial, with a committed .env")
    plant_help_viewer(root / "helpviewer", MARKER)
    for name, include in (("include-abs", outside / "creds.ini"), ("include-rel", "../../../outside/creds.ini")):
        make_repo(root / name)
        with (root / name / ".git" / "config").open("a") as config:
            config.write(f"[include]\n\tpath = {include}\n")
    make_repo(root / "include-secret")
    (root / "include-secret" / ".pypirc").write_text(f"[pypi]\n\tpassword = {SECRET}\n")
    with (root / "include-secret" / ".git" / "config").open("a") as config:
        config.write("[include]\n\tpath = ../.pypirc\n")
    (root / "ruff-extend").mkdir()
    (root / "ruff-extend" / "a.py").write_text("x = 1\n")
    (root / "ruff-extend" / "pyproject.toml").write_text(f'[tool.ruff]\nextend = "{outside / "ruff-base.toml"}"\n')
    (root / "ruff-nested" / "deep").mkdir(parents=True)
    (root / "ruff-nested" / "a.py").write_text("x = 1\n")
    (root / "ruff-nested" / "deep" / "ruff.toml").write_text(f'extend = "{outside / "ruff-base.toml"}"\n')
    (root / "ruff-cache").mkdir()
    (root / "ruff-cache" / "a.py").write_text("x = 1\n")
    (root / "ruff-cache" / "ruff.toml").write_text(f'cache-dir = "{outside / "ruff-cache"}"\n')
    (root / "prog.jq").write_text('import "../outside/leak" as $x; $x\n')
    return {"base": base, "root": root, "outside": outside}


def server_env(world: dict[str, Path], sandbox: str) -> dict[str, str]:
    """The shell_ops server's environment; the sandbox mode is always explicit (`section_in_memory` keeps a server's
    environment while its client is open, so an unstated mode would be the other server's)."""
    return {
        "MCP_SECTIONS_CONFIG": os.devnull,
        "MCP_SECTIONS_DATA_DIR": str(world["base"] / ("data" if sandbox == "auto" else f"data-{sandbox}")),
        "MCP_SECTIONS_SHELL_OPS_SEARCH_PATH": SEARCH_PATH,
        "MCP_SECTIONS_SHELL_OPS_SANDBOX": sandbox,
    }


@pytest.fixture(scope="module")
async def shell(world: dict[str, Path]) -> AsyncIterator[Client]:
    """The server as it runs by default: every program inside the OS sandbox."""
    async with section_in_memory("shell_ops", "--root", str(world["root"]), env=server_env(world, "auto")) as connected:
        yield connected
    for path in markers(MARKER):
        os.unlink(path)


@pytest.fixture(scope="module")
async def unconfined(world: dict[str, Path]) -> AsyncIterator[Client]:
    """The same server with `sandbox = "off"`: the argument rules are the only layer there, and must hold."""
    async with section_in_memory("shell_ops", "--root", str(world["root"]), env=server_env(world, "off")) as connected:
        yield connected


@pytest.fixture
def unchanged_outside(world: dict[str, Path]) -> Any:
    """Nothing outside the root changes and no marker appears."""
    before = tree_state(world["outside"])
    yield
    assert tree_state(world["outside"]) == before, "something outside the roots changed"
    assert markers(MARKER) == [], f"an attack ran: {markers(MARKER)}"


@pytest.fixture
def root_restored(world: dict[str, Path]) -> Any:
    """What a confined attempt leaves in the root (a `git init`, `find -fprintf`'s list, an npm install, a ruff
    cache, a `git config` write) is removed after it, so that no attempt runs in another's leftovers."""
    root = world["root"]
    entries = set(os.listdir(root))
    config = (root / ".git" / "config").read_bytes()
    yield
    for name in set(os.listdir(root)) - entries:
        path = root / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    (root / ".git" / "config").write_bytes(config)


async def refused(client: Client, tool: str, arguments: dict[str, Any], code: str = PD) -> str:
    result = await client.call_tool(tool, arguments)
    error_code, message = error_of(result)
    assert error_code == code, message
    assert SECRET not in json.dumps(result.structured_content), "the refusal leaked the secret"
    return message


async def confined(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The call runs in the sandbox (no argument rule refuses it) and shows nothing from outside the roots: neither
    the secret of the outside files nor the outside `keep.txt`. With `unchanged_outside`, that is the OS stopping
    the attack's effect."""
    result = await client.call_tool(tool, arguments)
    shown = json.dumps(result.structured_content) + " ".join(getattr(block, "text", "") for block in result.content)
    assert SECRET not in shown, f"the secret came back: {shown}"
    assert KEPT not in shown, f"the outside file was read: {shown}"
    assert not result.is_error, shown  # it ran: no argument rule stands in for the OS here
    data = data_of(result)
    assert data["sandbox"] == "bubblewrap", data
    return data


# -- git: the help viewer of the repository config ----------------------------------------------------------


def test_control_help_viewer_really_runs(tmp_path: Path) -> None:
    """Plain git (with the server's environment hardening) runs the planted viewer: the test below is meaningful."""
    prefix = f"/tmp/PWNED-red-control-{uuid.uuid4().hex[:12]}"
    plant_help_viewer(tmp_path / "repo", prefix)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **GIT_IDENTITY}
    try:
        subprocess.run(
            ["git", "-c", "core.hooksPath=/dev/null", "--no-pager", "status", "--help"],
            cwd=tmp_path / "repo",
            env=env,
            capture_output=True,
            check=False,
        )
        assert markers(prefix) == [f"{prefix}-man"]
    finally:
        for path in markers(prefix):
            os.unlink(path)


@pytest.mark.anyio
@pytest.mark.usefixtures("unchanged_outside")
@pytest.mark.parametrize(
    ("command", "viewer_runs"),
    [
        (["git", "status", "--help"], True),
        (["git", "--help", "status"], True),
        (["git", "config", "--help"], True),
        (["git", "-C", ".", "log", "-1", "--help"], False),  # not `git help log`: log's own option summary
        (["git", "--no-pager", "commit", "--help"], True),
    ],
    ids=["sub-help", "global-help", "config-help", "after-options", "no-pager"],
)
async def test_git_help_runs_the_repository_viewer_only_confined(
    shell: Client, unconfined: Client, command: list[str], viewer_runs: bool
) -> None:
    """With the sandbox off `--help` is refused: the viewer would run on the host. Inside the sandbox no rule remains
    for it (README section 2): git's help runs the repository's viewer there, confined. It says it ran, and its
    marker landed in the sandbox's own /tmp, gone with it: none appears on the host (`unchanged_outside`)."""
    message = await refused(unconfined, "run_command", {"command": command, "cwd": "helpviewer"})
    assert "--help" in message and "-h" in message
    viewed = await confined(shell, "run_command", {"command": command, "cwd": "helpviewer"})
    assert (VIEWER_RAN in viewed["stdout"]) is viewer_runs, viewed
    usage = data_of(await shell.call_tool("run_command", {"command": ["git", "status", "-h"], "cwd": "helpviewer"}))
    assert "usage: git status" in usage["stdout"] + usage["stderr"]


# -- git: config includes leading out of the roots -----------------------------------------------------------


def test_control_include_really_leaks(world: dict[str, Path]) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(world["base"]), **GIT_IDENTITY}
    for name in ("include-abs", "include-rel", "include-secret"):
        result = subprocess.run(
            ["git", "config", "--get", "pypi.password"],
            cwd=world["root"] / name,
            env=env,
            capture_output=True,
            text=True,
        )
        assert result.stdout.strip() == SECRET, name


@pytest.mark.anyio
@pytest.mark.usefixtures("unchanged_outside")
@pytest.mark.parametrize("repo", ["include-abs", "include-rel", "include-secret"])
@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("run_command", {"command": ["git", "config", "--get", "pypi.password"]}),
        ("run_command", {"command": ["git", "config", "--list"]}),
        ("run_command", {"command": ["git", "config", "get", "--all", "pypi.password"]}),
        ("git_status", {}),
        ("git_log", {}),
    ],
    ids=["config-get", "config-list", "config-get-new-syntax", "git_status", "git_log"],
)
async def test_git_config_includes_outside_or_secret_are_refused(
    shell: Client, repo: str, tool: str, arguments: dict[str, Any]
) -> None:
    message = await refused(shell, tool, {**arguments, "cwd": repo})
    assert "includes" in message


# -- git: blob paths that name secrets -----------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.usefixtures("unchanged_outside")
@pytest.mark.parametrize(
    "command",
    [
        ["git", "show", "HEAD:.env"],
        ["git", "show", "HEAD:./.env"],
        ["git", "cat-file", "-p", "HEAD:.env"],
        ["git", "show", ":.env"],
        ["git", "show", ":0:.env"],
        ["git", "log", "-1", "-p", "HEAD:.ENV"],
        ["git", "grep", "API_KEY", "HEAD:.env"],
    ],
)
async def test_git_blob_syntax_cannot_name_a_secret(shell: Client, command: list[str]) -> None:
    await refused(shell, "run_command", {"command": command})
    shown = data_of(await shell.call_tool("run_command", {"command": ["git", "show", "HEAD:README.md"]}))
    assert shown["stdout"] == "readme\n"


# -- jq: modules read from anywhere ---------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.usefixtures("unchanged_outside")
@pytest.mark.parametrize(
    "command",
    [
        ["jq", "-n", 'import "../outside/leak" as $x; $x'],
        ["jq", "-n", f'import "leak" as $x {{search: "{"{out}"}"}}; $x'],
        ["jq", "-n", 'include "../outside/mod"; s'],
        ["jq", "-n", 'include "../outside/bad"; 1'],
        ["jq", "-n", '"../outside/mod" | modulemeta'],
        ["jq", "-n", "-f", "prog.jq"],
        ["jq", "-f", "-n", "prog.jq"],
        ["jq", "--from-file", "prog.jq"],
    ],
    ids=["import-relative", "import-search", "include", "include-syntax-error", "modulemeta", "f", "f-later", "long"],
)
async def test_jq_modules_from_outside_are_never_read(
    shell: Client, unconfined: Client, world: dict[str, Path], command: list[str]
) -> None:
    """Refused with the sandbox off, where the rule is the only layer; inside the sandbox no rule remains for jq's
    modules (README section 2): jq runs and finds no module outside the roots, which do not exist there."""
    command = [arg.replace("{out}", str(world["outside"])) for arg in command]
    assert "jq" in await refused(unconfined, "run_command", {"command": command})
    ran = await confined(shell, "run_command", {"command": command})
    assert ran["exit_code"] != 0 and "module not found" in ran["stderr"], ran


@pytest.mark.anyio
async def test_jq_filters_still_work(shell: Client) -> None:
    for filter_text in (".include[0]", '.["include"][0]', 'if has("include") then .include[0] else 0 end'):
        data = data_of(await shell.call_tool("run_command", {"command": ["jq", "-r", filter_text, "data.json"]}))
        assert data["stdout"] == "src\n", (filter_text, data)


# -- ruff: project config that writes or reads outside --------------------------------------------------------

needs_ruff = pytest.mark.skipif(not (VENV_BIN / "ruff").exists(), reason="ruff is not installed next to python")


NOT_THERE = "No such file or directory"  # ruff's words for a file the sandbox does not show


@needs_ruff
@pytest.mark.anyio
@pytest.mark.usefixtures("unchanged_outside", "root_restored")
@pytest.mark.parametrize(
    ("arguments", "inside"),
    [
        ({"command": ["ruff", "check", "."], "cwd": "ruff-extend"}, NOT_THERE),
        ({"command": ["ruff", "format", "--check", "ruff-extend"]}, NOT_THERE),
        ({"command": ["ruff", "check", "."], "cwd": "ruff-nested"}, NOT_THERE),
        ({"command": ["ruff", "check", "--config", "../outside/ruff-base.toml", "."]}, "does not point to a config"),
        ({"command": ["ruff", "check", "--cache-dir", "cache", "ruff-cache"]}, "All checks passed"),  # a root's cache
        ({"command": ["ruff", "server"]}, ""),  # a language server with no client: it ends, confined
    ],
    ids=["extend", "extend-by-path", "extend-nested", "config-outside", "cache-dir", "server"],
)
async def test_ruff_config_cannot_reach_outside(
    shell: Client, unconfined: Client, arguments: dict[str, Any], inside: str
) -> None:
    """Refused with the sandbox off; inside the sandbox ruff's options and configs run (README section 2), and the
    outside file a config extends is not there to quote."""
    await refused(unconfined, "run_command", arguments)
    ran = await confined(shell, "run_command", arguments)
    assert inside in ran["stdout"] + ran["stderr"], ran


@needs_ruff
@pytest.mark.anyio
@pytest.mark.usefixtures("unchanged_outside")
async def test_ruff_cache_dir_in_project_config_writes_nothing_outside(
    shell: Client, unconfined: Client, world: dict[str, Path]
) -> None:
    """With the sandbox off ruff runs with `--no-cache` (the config's cache-dir is outside); inside the sandbox it
    runs as asked and the cache it writes there is gone with it."""
    for command in (["ruff", "check", "."], ["ruff", "format", "--check", "."]):
        data = data_of(await unconfined.call_tool("run_command", {"command": command, "cwd": "ruff-cache"}))
        assert data["exit_code"] == 0 and "--no-cache" in data["args"], data
        assert not (world["outside"] / "ruff-cache").exists()
        data = await confined(shell, "run_command", {"command": command, "cwd": "ruff-cache"})
        assert data["exit_code"] == 0, data
        assert not (world["outside"] / "ruff-cache").exists()


# -- gateway: get_project_info --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gateway_world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("red-team-gateway").resolve()
    outer, outside = base / "outer", base / "outside"
    (outer / ".git").mkdir(parents=True)  # the roots lie inside a repository whose .git is outside them
    (outer / ".git" / "HEAD").write_text(f"ref: refs/heads/{SECRET}-outer\n")
    (outside / "gitdir").mkdir(parents=True)
    (outside / "gitdir" / "HEAD").write_text(f"ref: refs/heads/{SECRET}-gitdir\n")
    (outside / "package.json").write_text(json.dumps({"name": SECRET, "version": "6.6.6", "description": SECRET}))
    root = outer / "root"
    linked = root / "linked"
    linked.mkdir(parents=True)
    (linked / "package.json").symlink_to(outside / "package.json")
    (linked / ".git").write_text(f"gitdir: {outside / 'gitdir'}\n")
    (root / "plain").mkdir()
    (root / "plain" / "pyproject.toml").write_text('[project]\nname = "plain"\nversion = "1.0"\n')
    (root / "escape").symlink_to(outside)
    return {"base": base, "root": root, "outside": outside}


@pytest.fixture(scope="module")
async def gateway(gateway_world: dict[str, Path]) -> AsyncIterator[Client]:
    root = gateway_world["root"]
    args = ["--data-dir", str(gateway_world["base"] / "data"), "--root", str(root)]
    async with gateway_in_memory(*args, cwd=root) as connected:
        yield connected


@pytest.mark.anyio
async def test_project_info_reads_nothing_outside_the_roots(gateway: Client) -> None:
    for path in ("linked", "plain", None):
        result = await gateway.call_tool("get_project_info", {"path": path} if path else {})
        assert SECRET not in json.dumps(result.structured_content), (path, result.structured_content)
    linked = data_of(await gateway.call_tool("get_project_info", {"path": "linked"}))
    assert (linked["name"], linked["version"], linked["git"]) == ("linked", None, None)
    plain = data_of(await gateway.call_tool("get_project_info", {"path": "plain"}))
    assert (plain["name"], plain["version"], plain["type"]) == ("plain", "1.0", "python")
    for path in ("escape", "../outside", "~", "..", "file:///etc"):
        error_code, _ = error_of(await gateway.call_tool("get_project_info", {"path": path}))
        assert error_code in (PD, "NOT_FOUND"), path
    error_code, _ = error_of(await gateway.call_tool("get_project_info", {"path": "escape"}))
    assert error_code == PD


# -- attempts that held (coverage the older hostile tests lack) -----------------------------------------------

HELD_COMMANDS: list[tuple[str, dict[str, Any], str]] = [
    ("git-config-set-new-syntax", {"command": ["git", "config", "set", "core.fsmonitor", "touch x"]}, PD),
    ("git-config-unset-new-syntax", {"command": ["git", "config", "unset", "user.name"]}, PD),
    ("git-config-global", {"command": ["git", "config", "--global", "core.pager", "touch x"]}, PD),
    ("git-config-file", {"command": ["git", "config", "--file=/tmp/x", "a.b", "c"]}, PD),
    ("git-C-outside", {"command": ["git", "-C", "/", "status"]}, PD),
    ("git-git-dir-outside", {"command": ["git", "--git-dir=/etc", "status"]}, PD),
    ("git-work-tree-outside", {"command": ["git", "--work-tree", "/", "status"]}, PD),
    ("git-init-template", {"command": ["git", "init", "--template=../outside", "x"]}, PD),
    ("git-init-separate-dir", {"command": ["git", "init", "--separate-git-dir=/tmp/red-sep", "x"]}, PD),
    ("git-commit-template-file", {"command": ["git", "commit", "-F", "/etc/passwd"]}, PD),
    ("git-format-patch-outside", {"command": ["git", "format-patch", "-o", "/tmp/red-patches", "HEAD~1"]}, PD),
    ("git-diff-no-index-outside", {"command": ["git", "diff", "--no-index", "/etc/passwd", "README.md"]}, PD),
    ("find-files0-from", {"command": ["find", "-files0-from", "/etc/passwd"]}, PD),
    ("find-fprintf", {"command": ["find", ".", "-fprintf", "list.txt", "%p"]}, PD),
    ("find-fls", {"command": ["find", ".", "-fls", "list.txt"]}, PD),
    ("find-follow", {"command": ["find", "-L", "."]}, PD),
    ("sort-files0-from", {"command": ["sort", "--files0-from=/etc/passwd"]}, PD),
    ("sort-compress-program", {"command": ["sort", "--compress-prog=touch", "README.md"]}, PD),
    ("sort-temporary-dir", {"command": ["sort", "-T", "/tmp", "README.md"]}, PD),
    ("grep-f-shadow", {"command": ["grep", "-f", "/etc/shadow", "README.md"]}, PD),
    ("grep-dereference", {"command": ["grep", "-R", "x", "."]}, PD),
    ("diff-outside", {"command": ["diff", "README.md", "/etc/hostname"]}, PD),
    ("cat-proc-environ", {"command": ["cat", "/proc/self/environ"]}, PD),
    ("cat-proc-parent-environ", {"command": ["cat", f"/proc/{os.getpid()}/environ"]}, PD),
    ("head-dev-zero", {"command": ["head", "-c", "100", "/dev/zero"]}, PD),
    ("cat-secret-dot-slash", {"command": ["cat", "./.env"]}, PD),
    ("cat-secret-dotdot", {"command": ["cat", "helpviewer/../.env"]}, PD),
    ("python-m-pytest-rootdir", {"command": ["python3", "-m", "pytest", "--rootdir=/"]}, PD),
    ("python-m-pytest-plugin", {"command": ["python3", "-m", "pytest", "-p", "evil"]}, PD),
    ("python-m-pytest-plugin-attached", {"command": ["python3", "-mpytest", "-pevil"]}, PD),
    ("node-require-long", {"command": ["node", "--require=./x.js", "x.js"]}, PD),
    ("node-import", {"command": ["node", "--import", "data:text/javascript,1", "x.js"]}, PD),
    ("node-env-file", {"command": ["node", "--env-file=.env", "x.js"]}, PD),
    ("npm-exec", {"command": ["npm", "exec", "--", "touch", "x"]}, PD),
    ("npm-install-file-spec", {"command": ["npm", "install", "foo@file:../outside"]}, PD),
    ("npm-alias", {"command": ["npm", "install", "x@npm:evil@1"]}, PD),
    ("npm-config-env", {"command": ["npm", "test", "--node-options=--require=./x.js"]}, PD),
    ("npm-userconfig", {"command": ["npm", "test", "--userconfig=../outside/keep.txt"]}, PD),
    ("npm-prefix", {"command": ["npm", "run", "test", "--prefix", "/"]}, PD),
    ("jq-rawfile-outside", {"command": ["jq", "-n", "--rawfile", "x", "/etc/passwd", "$x"]}, PD),
    ("jq-library-outside", {"command": ["jq", "-L", "/", "-n", "1"]}, PD),
    ("env-prefix-argv", {"command": ["npm_config_script_shell=/bin/bash", "npm", "test"]}, II),
    ("tab-separated", {"command": "ls\t;\ttouch x"}, II),
    ("long-argument", {"command": ["ls", "a" * 9000]}, II),
    ("many-arguments", {"command": ["ls", *(["."] * 300)]}, II),
]


HOST_TMP = ("/tmp/x", "/tmp/red-sep", "/tmp/red-patches")  # what the attempts above write: the sandbox's own /tmp

# The attempts above that a rule refuses inside the sandbox too, with the rule that remains (README section 2's
# table); every other one is refused by a rule of the sandbox-off layer only.
REFUSED_INSIDE: dict[str, str] = {
    "git-C-outside": "git -C inside the roots: the hardened probes run on the host in that repository",
    "git-git-dir-outside": "git --git-dir inside the roots (the probes)",
    "git-work-tree-outside": "git --work-tree inside the roots (the probes)",
    "cat-secret-dot-slash": "an argument naming an existing protected file",
    "cat-secret-dotdot": "an argument naming an existing protected file",
    "node-env-file": "an argument (an option's value) naming an existing protected file",
    "npm-exec": "never-allowed wrappers: npm exec runs any program",
    "env-prefix-argv": "no shell: a VAR=value first element would be the program",
    "tab-separated": "no shell syntax in a string command",
    "long-argument": "bounds on input",
    "many-arguments": "bounds on input",
}


@pytest.mark.anyio
@pytest.mark.usefixtures("unchanged_outside", "root_restored")
@pytest.mark.parametrize(("name", "arguments", "code"), HELD_COMMANDS, ids=[name for name, _, _ in HELD_COMMANDS])
async def test_held_command_attempts(
    shell: Client, unconfined: Client, name: str, arguments: dict[str, Any], code: str
) -> None:
    """Refused with the sandbox off, where the argument rules are the only layer; inside the sandbox refused by a
    rule that remains (REFUSED_INSIDE), or run with its effect stopped by the OS."""
    await refused(unconfined, "run_command", arguments, code)
    if name in REFUSED_INSIDE:
        await refused(shell, "run_command", arguments, code)
        return
    on_host = {path: os.path.lexists(path) for path in HOST_TMP}
    await confined(shell, "run_command", arguments)
    assert {path: os.path.lexists(path) for path in HOST_TMP} == on_host, "written to the host's /tmp"


@pytest.mark.anyio
@pytest.mark.usefixtures("unchanged_outside")
async def test_output_flood_and_fork_within_timeout_are_contained(shell: Client, world: dict[str, Path]) -> None:
    """`yes`-like output is capped (head/tail kept) and stopped at the total output limit; a process group that
    forks dies at the deadline."""
    flood = world["root"] / "flood.py"
    flood.write_text("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n")
    forker = world["root"] / f"forker-{uuid.uuid4().hex[:8]}.py"
    forker.write_text(
        "import os, time\nfor _ in range(20):\n    if os.fork() == 0:\n        time.sleep(600)\n        os._exit(0)\n"
        "print('forked', flush=True)\ntime.sleep(600)\n"
    )
    try:
        flooded = data_of(
            await shell.call_tool("run_command", {"command": ["python3", "flood.py"], "timeout_seconds": 30})
        )
        assert flooded["stopped_for_output"] is True and flooded["exit_code"] == -9  # stopped at the total limit
        assert len(flooded["stdout"]) < 200_000 and flooded["stdout_dropped_bytes"] < 64 * 1024 * 1024
        forked = await shell.call_tool("run_command", {"command": ["python3", forker.name], "timeout_seconds": 1})
        assert error_of(forked)[0] == "TIMEOUT"
        assert "forked" in forked.structured_content["details"]["stdout_tail"]  # the children were running
        assert running_with(forker.name, zombies=True) == [], "children of a timed-out command survived"
    finally:
        flood.unlink()
        forker.unlink()


# -- file_ops: globs that backtrack, and the installer's environment ------------------------------------------

DEEP = 40
BACKTRACKING_GLOBS = ("**/" * 14 + "x", "*a" * 24 + "b", "**/*a*a*a*a*a*a*a*a*a*a*a*a*b")


@pytest.fixture(scope="module")
def files_world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("red-team-files").resolve()
    root = base / "root"
    deep = root.joinpath(*(["a"] * DEEP))
    deep.mkdir(parents=True)
    (deep / ("a" * 200)).write_text("needle\n")
    venv = root / "proj" / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "python").write_text("#!/bin/sh\nenv\n")  # a project venv's interpreter is the project's code
    (venv / "bin" / "python").chmod(0o755)
    return {"base": base, "root": root}


@pytest.fixture(scope="module")
async def files(files_world: dict[str, Path]) -> AsyncIterator[Client]:
    data = files_world["root"].parent / "data"
    env = {"MCP_SECTIONS_CONFIG": os.devnull, "RED_TEAM_API_TOKEN": SECRET, "MCP_SECTIONS_DATA_DIR": str(data)}
    async with section_in_memory("file_ops", "--root", str(files_world["root"]), env=env) as connected:
        yield connected


@pytest.mark.anyio
@pytest.mark.parametrize("glob", BACKTRACKING_GLOBS, ids=["double-stars", "stars-in-a-name", "mixed"])
async def test_backtracking_globs_cannot_hang_file_ops(files: Client, files_world: dict[str, Path], glob: str) -> None:
    import anyio

    with anyio.fail_after(60):
        data_of(await files.call_tool("glob_files", {"pattern": glob}))
        data_of(await files.call_tool("glob_files", {"pattern": "**/*", "exclude": [f"a/{glob}"]}))
        data_of(await files.call_tool("search_files", {"pattern": "needle", "include": [f"a/{glob}"]}))
        (files_world["root"] / ".gitignore").write_text(f"{glob}\n/{glob}\n")
        try:
            data_of(await files.call_tool("directory_tree", {"max_depth": 20, "respect_gitignore": True}))
            found = data_of(await files.call_tool("search_files", {"pattern": "needle"}))
            assert found["matches"], found
        finally:
            (files_world["root"] / ".gitignore").unlink()


def test_backtracking_gitignore_cannot_hang_the_brain() -> None:
    import time

    from mcp_sections.shared.text.gitignore import is_ignored, parse_gitignore

    rules = parse_gitignore("\n".join(BACKTRACKING_GLOBS) + "\n*.pyc\n", "")
    started = time.monotonic()
    assert not is_ignored(rules, "/".join(["a"] * DEEP) + "/" + "a" * 200, False)
    assert is_ignored(rules, "src/x.pyc", False)
    assert time.monotonic() - started < 5


@pytest.mark.anyio
async def test_install_package_does_not_hand_the_server_environment_to_the_installer(files: Client) -> None:
    result = await files.call_tool("install_package", {"manager": "pip", "packages": ["requests"], "path": "proj"})
    data = data_of(result)
    assert "PIP_NO_INPUT=1" in data["output"], data  # the project's interpreter ran and printed its environment
    assert SECRET not in json.dumps(result.structured_content)
    assert "RED_TEAM_API_TOKEN" not in data["output"]
