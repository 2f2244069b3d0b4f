"""Nothing inside a root can widen the boundary (issue #20): what a confined program can change is untrusted.

The red team's reproducers, re-derived, with a root at the home directory (the common Claude Desktop set-up) and the
suite's own state where platformdirs puts it (`XDG_*` under that home):
- a sandboxed script renames a *parent* of the hidden state (`~/.local/share`, `~/.local`, `~/.config`): the next
  call then hid nothing, and the script wrote `sandbox = "off"` into the config;
- when `~/.config/mcp-sections` did not exist, a script created it and the config in it;
- the same moves through file_ops (`move_file`, `delete_path` of `~/.local`);
- a program replaced the shared TMPDIR by a file, and every later command failed until a restart;
- a config file that would unprotect itself, or that others can write, was used;
- the state moved under a running server, which silently went on with another.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.confinement.sandbox import Confinement, detect
from tests.in_memory import section_in_memory
from tests.stdio import call, cli_command, fail, server_environment

HAVE_BWRAP = shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin") is not None
CANARY = "trust-boundary-canary-5d21"
OFF = "[sections.shell_ops]\nsandbox = 'off'\n"

MOVE_THE_WAY = r"""
import os, pathlib, shutil, sys
home = pathlib.Path(sys.argv[1])
for source, target in [(".local/share", ".local/share-moved"), (".local", ".local-moved"), (".config", ".config-moved"),
                       (".cache", ".cache-moved"), (".config/mcp-sections", "cfg-moved")]:
    try:
        os.rename(home / source, home / target)
        print("moved", source)
    except OSError as exc:
        print("refused", source, exc.errno)
for victim in (".local", ".config/mcp-sections"):
    try:
        shutil.rmtree(home / victim)
        print("removed", victim)
    except OSError as exc:
        print("refused rm", victim, exc.errno)
try:
    (home / ".config/mcp-sections/config.toml").write_text("[sections.shell_ops]\nsandbox = 'off'\n")
    print("wrote config")
except OSError as exc:
    print("refused config", exc.errno)
"""


def make_home(base: Path, *, config: bool) -> dict[str, Path]:
    home = base / "home"
    data, cache, config_dir = (
        home / ".local/share/mcp-sections",
        home / ".cache/mcp-sections",
        home / ".config/mcp-sections",
    )
    (data / "audit").mkdir(parents=True)
    (data / "audit" / "old.jsonl").write_text(f'{{"tool": "{CANARY}"}}\n')
    (home / "project").mkdir()
    (home / "project" / "move.py").write_text(MOVE_THE_WAY)
    (home / "project" / "break_tmp.py").write_text(
        "import os, shutil\nt = os.environ['TMPDIR']\nshutil.rmtree(t)\nopen(t, 'w').write('x')\nprint('broke', t)\n"
    )
    if config:
        config_dir.mkdir(parents=True)
        (config_dir / "config.toml").write_text(f"# {CANARY}\n")
    return {"home": home, "data": data, "cache": cache, "config_dir": config_dir}


def xdg(home: Path) -> dict[str, str]:
    """The own state where platformdirs puts it, under a home directory that is also the root."""
    return {
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        # the test session's isolation names its own data, cache and config: empty values are ignored
        "MCP_SECTIONS_DATA_DIR": "",
        "MCP_SECTIONS_CACHE_DIR": "",
        "MCP_SECTIONS_CONFIG": "",
    }


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_home(tmp_path_factory.mktemp("trust"), config=True)


@pytest.fixture(scope="module")
async def shell(world: dict[str, Path]) -> AsyncIterator[Client]:
    if not HAVE_BWRAP:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")
    async with section_in_memory("shell_ops", "--root", str(world["home"]), env=xdg(world["home"])) as client:
        yield client


@pytest.mark.anyio
async def test_a_script_cannot_move_remove_or_replace_the_way_to_the_own_state(
    shell: Client, world: dict[str, Path]
) -> None:
    home = world["home"]
    result = await call(
        shell, "run_command", command=["python3", "move.py", str(home)], cwd="project", timeout_seconds=30
    )
    assert result["sandbox"] == "bubblewrap" and result["exit_code"] == 0, result
    assert "moved" not in result["stdout"] and "removed" not in result["stdout"], result["stdout"]
    assert result["stdout"].count("refused") == 8, result["stdout"]
    assert (world["config_dir"] / "config.toml").read_text() == f"# {CANARY}\n"
    assert (world["data"] / "audit" / "old.jsonl").exists() and (home / ".local/share").is_dir()
    # the next call still sees nothing of the state
    found = await call(shell, "run_command", command=["grep", "-rl", CANARY, ".."], cwd="project")
    assert found["stdout"].strip() == ""


@pytest.mark.anyio
async def test_a_script_cannot_create_the_config_before_it_exists(tmp_path: Path) -> None:
    if not HAVE_BWRAP:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")
    paths = make_home(tmp_path, config=False)
    home = paths["home"]
    assert not paths["config_dir"].exists()
    async with section_in_memory("shell_ops", "--root", str(home), env=xdg(home)) as shell:
        assert paths["config_dir"].is_dir()  # made (empty, 0700) at start, so that it can be hidden
        result = await call(shell, "run_command", command=["python3", "move.py", str(home)], cwd="project")
        assert "wrote config" not in result["stdout"] and "refused config" in result["stdout"], result["stdout"]
    assert list(paths["config_dir"].iterdir()) == []
    assert oct(paths["config_dir"].stat().st_mode & 0o777) == "0o700"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("move_file", {"source": ".local", "destination": "elsewhere"}),
        ("move_file", {"source": ".local/share", "destination": "project/share"}),
        ("delete_path", {"path": ".config", "recursive": True}),
        ("delete_path", {"path": ".local", "recursive": True}),
        ("move_file", {"source": "project", "destination": ".cache", "overwrite": True}),
    ],
)
async def test_file_tools_refuse_to_move_the_way_to_the_own_state(
    tmp_path: Path, tool: str, arguments: dict[str, object]
) -> None:
    paths = make_home(tmp_path, config=True)
    async with section_in_memory("file_ops", "--root", str(paths["home"]), env=xdg(paths["home"])) as files:
        message = await fail(files, tool, "PERMISSION_DENIED", **arguments)
    assert "own state" in message
    assert (paths["data"] / "audit" / "old.jsonl").exists() and (paths["config_dir"] / "config.toml").exists()


@pytest.mark.anyio
async def test_a_program_that_breaks_its_tmpdir_only_breaks_its_own_call(shell: Client) -> None:
    first = await call(shell, "run_command", command=["python3", "break_tmp.py"], cwd="project")
    assert first["stdout"].startswith("broke")
    again = await call(shell, "run_command", command=["python3", "break_tmp.py"], cwd="project")
    assert again["stdout"].startswith("broke") and again["stdout"] != first["stdout"]  # a fresh one every call
    listed = await call(shell, "run_command", command=["ls", "-a"], cwd="project")
    assert listed["exit_code"] == 0 and "move.py" in listed["stdout"]
    await call(shell, "run_command", command=["git", "init", "-q"], cwd="project")
    status = await call(shell, "git_status", cwd="project")  # git runs with a private home too
    assert status["total_entries"] >= 2


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [*cli_command(), *args]
    return subprocess.run(
        command, env=server_environment(env), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )


def test_a_config_file_inside_a_root_cannot_switch_the_sandbox_off(tmp_path: Path) -> None:
    paths = make_home(tmp_path, config=True)
    config = paths["config_dir"] / "config.toml"
    config.write_text(OFF)
    done = run_cli("serve", "shell_ops", "--root", str(paths["home"]), env=xdg(paths["home"]))
    assert done.returncode == 2, done
    assert (
        str(config) in done.stderr
        and "sandbox = 'off'" in done.stderr
        and "MCP_SECTIONS_SHELL_OPS_SANDBOX" in (done.stderr)
    )
    # outside every root the same file is the operator's choice
    outside = tmp_path / "etc" / "config.toml"
    outside.parent.mkdir()
    outside.write_text(OFF + 'roots = ["/nonexistent-root"]\n')
    done = run_cli("tools", "shell_ops", env={**xdg(paths["home"]), "MCP_SECTIONS_CONFIG": str(outside)})
    assert done.returncode == 0, done.stderr


def test_a_config_file_others_can_write_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "etc" / "config.toml"
    config.parent.mkdir()
    config.write_text("log_level = 'INFO'\n")
    config.chmod(0o666)
    done = run_cli("serve", "calculator", "--config", str(config), env={})
    assert done.returncode == 2 and "writable by other users" in done.stderr and "chmod go-w" in done.stderr


@pytest.mark.anyio
async def test_a_state_moved_under_a_running_server_stops_every_call(tmp_path: Path) -> None:
    data = tmp_path / "state"
    async with section_in_memory("todo", "--data-dir", str(data)) as todo:
        await call(todo, "todo_create", workflow_id="w", name="first", description="x")
        data.rename(tmp_path / "state-moved")
        data.mkdir()  # another, empty state where the old one was
        message = await fail(todo, "todo_list", "PERMISSION_DENIED", workflow_id="w")
    assert "moved, replaced or removed" in message and str(data) in message


def test_the_sandbox_pins_the_way_and_hides_the_state(tmp_path: Path) -> None:
    """The bubblewrap command line: the way is bound onto itself, after the root, before what hides the state."""
    home = make_home(tmp_path, config=True)["home"]
    guard = PathGuard([home], private=[home / ".local/share/mcp-sections", home / ".config/mcp-sections"])
    assert [p.relative_to(home).as_posix() for p in guard.pinned_inside_roots()] == [
        ".local",
        ".local/share",
        ".config",
    ]
    argv = detect("off").wrap(["/usr/bin/true"], home, Confinement.within(guard, writable=[home]))
    assert argv == ["/usr/bin/true"]
    if HAVE_BWRAP:
        from mcp_sections.shared.confinement.sandbox import Sandbox

        line = " ".join(
            Sandbox("bubblewrap", "/usr/bin/bwrap").wrap(
                ["/usr/bin/true"], home, Confinement.within(guard, writable=[home])
            )
        )
        assert line.index(f"--bind {home} {home}") < line.index(f"--bind {home}/.local {home}/.local")
        assert line.index(f"--bind {home}/.local/share {home}/.local/share") < line.index("--tmpfs " + str(home))


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv")
def test_as_an_unprivileged_user_the_way_stays_pinned(request: pytest.FixtureRequest) -> None:
    """The same confinement when bubblewrap is started by an unprivileged user (no capabilities to begin with, the
    user namespace made by the user): renaming the way to the state and unhiding it still fail."""
    from mcp_sections.shared.confinement.sandbox import Sandbox

    if not HAVE_BWRAP:
        pytest.skip("bubblewrap is not installed")
    base = Path(tempfile.mkdtemp(prefix="mcp-sections-unprivileged-"))  # pytest's own tmp is private to root
    request.addfinalizer(lambda: shutil.rmtree(base, ignore_errors=True))
    base.chmod(0o755)
    paths = make_home(base, config=True)
    subprocess.run(["chown", "-R", "65534:65534", str(paths["home"])], check=True)
    home = paths["home"]
    guard = PathGuard([home], private=[paths["data"], paths["config_dir"]])
    sandbox = Sandbox("bubblewrap", shutil.which("bwrap", path="/usr/bin:/bin"))
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    argv = sandbox.wrap(
        [python, str(home / "project" / "move.py"), str(home)],
        home / "project",
        Confinement.within(guard, writable=[home]),
    )
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home)},
    )
    assert done.returncode == 0, done.stderr
    assert "moved" not in done.stdout and done.stdout.count("refused") == 8, done.stdout
    assert (paths["config_dir"] / "config.toml").read_text() == f"# {CANARY}\n"


@pytest.mark.anyio
async def test_the_servers_own_installation_is_read_only_when_a_root_contains_it(tmp_path: Path) -> None:
    """`make run` serves a checkout over itself: its .venv and code lie inside the root. A program may run them, never
    plant a `.pth` there (it would run unconfined in the next server) nor move the environment aside."""
    import site

    from mcp_sections.shared.ground.locations import installation_dirs

    if not HAVE_BWRAP:
        pytest.skip("bubblewrap is not installed")
    prefix = installation_dirs()[0]
    root = Path(os.path.commonpath([prefix, *installation_dirs()[1:]])) if len(installation_dirs()) > 1 else prefix
    packages = Path(next(p for p in site.getsitepackages() if p.startswith(str(prefix))))
    planted = packages / "zz_mcp_sections_canary.pth"
    script = tmp_path / "plant.py"
    script.write_text(
        "import os, sys\n"
        f"for target in ({str(planted)!r},):\n"
        "    try:\n        open(target, 'w').write('')\n        print('planted')\n"
        "    except OSError as exc:\n        print('refused', exc.errno)\n"
        f"try:\n    os.rename({str(prefix)!r}, {str(prefix)!r} + '-moved')\n    print('moved')\n"
        "except OSError as exc:\n    print('refused move', exc.errno)\n"
    )
    try:
        async with section_in_memory("shell_ops", "--root", str(root), "--root", str(tmp_path)) as shell:
            result = await call(shell, "run_command", command=["python3", str(script)], cwd=str(tmp_path))
        assert "planted" not in result["stdout"] and "moved" not in result["stdout"], result
        async with section_in_memory("file_ops", "--root", str(root)) as files:
            target = str(planted.relative_to(root))
            message = await fail(files, "write_file", "PERMISSION_DENIED", path=target, content="import os\n")
        assert "trusted base" in message
    finally:  # should the protection fail, leave the installation as it was
        moved = Path(str(prefix) + "-moved")
        if moved.is_dir() and not prefix.exists():
            moved.rename(prefix)
        planted.unlink(missing_ok=True)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv")
def test_as_an_unprivileged_user_the_sandbox_still_confines(request: pytest.FixtureRequest) -> None:
    """The rest of the sandbox's promises when bubblewrap is started by an unprivileged user: nothing outside the
    roots, no network, no capabilities, the own state hidden."""
    from mcp_sections.shared.confinement.sandbox import Sandbox

    if not HAVE_BWRAP:
        pytest.skip("bubblewrap is not installed")
    base = Path(tempfile.mkdtemp(prefix="mcp-sections-unprivileged-"))
    request.addfinalizer(lambda: shutil.rmtree(base, ignore_errors=True))
    base.chmod(0o755)
    paths = make_home(base, config=True)
    outside = base / "outside.txt"
    outside.write_text(CANARY)
    probe = paths["home"] / "project" / "probe.py"
    probe.write_text(
        "import os, socket, pathlib\n"
        f"print('outside', pathlib.Path({str(outside)!r}).exists())\n"
        f"print('state', sorted(os.listdir({str(paths['data'])!r})))\n"
        "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=1); print('network yes')\n"
        "except OSError:\n    print('network none')\n"
        "print('caps', open('/proc/self/status').read().split('CapEff:')[1].split()[0])\n"
    )
    subprocess.run(["chown", "-R", "65534:65534", str(paths["home"])], check=True)
    guard = PathGuard([paths["home"]], private=[paths["data"], paths["config_dir"]])
    sandbox = Sandbox("bubblewrap", shutil.which("bwrap", path="/usr/bin:/bin"))
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    argv = sandbox.wrap(
        [python, str(probe)], paths["home"] / "project", Confinement.within(guard, writable=[paths["home"]])
    )
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(paths["home"])},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines == ["outside False", "state []", "network none", "caps 0000000000000000"], done.stdout
