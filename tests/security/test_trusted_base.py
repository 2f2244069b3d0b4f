"""The suite's trusted base is computed and kept by the OS (issue #38, findings 1-4 and the sys.path hole).

Each test reproduces an attack of the red-team round on a home directory of its own: a root at the home directory (the
common Claude Desktop set-up), `~/.local/bin` and `~/.cargo/bin` on the search path, a dotfiles `~/.config` that is a
symbolic link, the suite's state under `~/.local/share` — and a real server over stdio that computes its trusted base
from that home. The venv's base interpreter is the real one this suite runs on (pyenv's, here and in CI), attacked with
a file of a unique name and removed afterwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp_types import ListRootsResult, Root

from tests.in_memory import section_in_memory
from tests.stdio import NO_WARM_UP, call, fail, section_client, server_parameters

HAVE_BWRAP = shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin") is not None
pytestmark = [
    pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap is not installed (apt-get install bubblewrap)"),
    pytest.mark.filterwarnings("ignore:The roots capability is deprecated"),
]
CANARY = "trusted-base-canary-7d21"
PEEK = """#!/usr/bin/python3
import os, sys
home = sys.argv[1]
for place in (".local/share/mcp-sections", ".local/share/keyrings"):
    path = os.path.join(home, place)
    print("list", place, sorted(os.listdir(path)) if os.path.isdir(path) else "absent")
try:
    print("credentials", open(os.path.join(home, ".cargo/credentials.toml")).read())
except OSError as exc:
    print("credentials unreadable", exc.errno)
"""


def make_home(base: Path) -> Path:
    """A home directory as a dotfiles user has it, with the suite's state in it and programs under it."""
    home = base / "home"
    (home / "dotfiles" / "config").mkdir(parents=True)
    (home / ".config").symlink_to(home / "dotfiles" / "config")
    for directory in (
        ".local/share/mcp-sections/audit",
        ".local/share/keyrings",
        ".cargo/bin",
        ".local/bin",
        "project",
    ):
        (home / directory).mkdir(parents=True, exist_ok=True)
    (home / ".local/share/mcp-sections/audit/gateway.jsonl").write_text(f'{{"tool": "{CANARY}"}}\n')
    (home / ".local/share/keyrings/login.keyring").write_text(CANARY)
    (home / ".cargo/credentials.toml").write_text(f'[registry]\ntoken = "{CANARY}"\n')
    (home / ".profile").write_text("# the user's login file\n")
    for program in (home / ".local/bin/peek", home / ".cargo/bin/peek-cargo"):
        program.write_text(PEEK)
        program.chmod(0o755)
    return home


def home_environment(home: Path, **extra: str) -> dict[str, str]:
    """A server that lives in `home`: its own HOME, the platform's default places for data, cache and config."""
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "MCP_SECTIONS_DATA_DIR": "",
        "MCP_SECTIONS_CACHE_DIR": "",
        "MCP_SECTIONS_CONFIG": "",
        **NO_WARM_UP,
        **extra,
    }


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return make_home(tmp_path)


@pytest.fixture
async def shell_at_home(home: Path) -> AsyncIterator[Client]:
    async with section_client("shell_ops", "--root", str(home), env=home_environment(home)) as client:
        yield client


SWAP_CONFIG = """
import os, sys
home = sys.argv[1]
link = os.path.join(home, ".config")
for attempt in ("unlink", "rename"):
    try:
        os.unlink(link) if attempt == "unlink" else os.rename(link, link + "-old")
        print(attempt, "done")
        break
    except OSError as exc:
        print(attempt, "refused", exc.errno)
try:
    os.makedirs(os.path.join(link, "mcp-sections"), exist_ok=True)
    with open(os.path.join(link, "mcp-sections", "config.toml"), "w") as file:
        file.write("[sections.shell_ops]\\nsandbox = 'off'\\n")
    print("config written")
except OSError as exc:
    print("config refused", exc.errno)
for name in (".bash_profile", ".zshenv"):
    try:
        open(os.path.join(home, name), "w").write("export MCP_SECTIONS_SHELL_OPS_SANDBOX=off\\n")
        print("login file", name, "written")
    except OSError as exc:
        print("login file", name, "refused", exc.errno)
try:
    open(os.path.join(home, ".profile"), "a").write("export MCP_SECTIONS_SHELL_OPS_SANDBOX=off\\n")
    print("profile appended")
except OSError as exc:
    print("profile refused", exc.errno)
for place in (".config/autostart", "dotfiles/config/systemd", ".local/share/applications", ".cargo"):
    try:
        os.makedirs(os.path.join(home, place), exist_ok=True)
        open(os.path.join(home, place, "evil.desktop"), "w").write("Exec=evil")
        print("configuration", place, "written")
    except OSError as exc:
        print("configuration", place, "refused", exc.errno)
"""


@pytest.mark.anyio
async def test_a_symlinked_config_cannot_be_replaced_nor_a_config_planted(shell_at_home: Client, home: Path) -> None:
    """Finding 3: the dotfiles `~/.config` link is pinned as a link (the home's own entries are fixed) and by its
    target; a script can neither replace it nor create `~/.config/mcp-sections/config.toml`, nor add a login file."""
    (home / "project" / "swap.py").write_text(SWAP_CONFIG)
    result = await call(
        shell_at_home, "run_command", command=["python3", "swap.py", str(home)], cwd="project", timeout_seconds=30
    )
    assert "done" not in result["stdout"] and "config written" not in result["stdout"], result
    assert "written" not in result["stdout"] and "profile appended" not in result["stdout"], result
    assert (home / ".config").is_symlink() and (home / ".config").resolve() == (home / "dotfiles/config").resolve()
    assert not (home / "dotfiles/config/mcp-sections/config.toml").exists()
    assert not (home / ".bash_profile").exists() and "MCP_SECTIONS" not in (home / ".profile").read_text()
    # what the program may change is still its own: a file inside the home's subdirectories, a new project directory
    (home / "project" / "work.py").write_text(
        "import os, sys\nopen(os.path.join(sys.argv[1], 'dotfiles', 'notes.txt'), 'w').write('mine')\n"
        "os.makedirs(os.path.join(sys.argv[1], 'project', 'build', 'out'))\nprint('worked')\n"
    )
    worked = await call(shell_at_home, "run_command", command=["python3", "work.py", str(home)], cwd="project")
    assert "worked" in worked["stdout"] and (home / "dotfiles/notes.txt").read_text() == "mine", worked


@pytest.mark.anyio
async def test_file_tools_refuse_to_replace_the_link_or_touch_the_login_files(home: Path) -> None:
    env = home_environment(home)
    async with section_client("file_ops", "--root", str(home), env=env) as files:
        for tool, arguments in (
            ("delete_path", {"path": ".config"}),
            ("move_file", {"source": ".config", "destination": "config-moved"}),
            ("write_file", {"path": ".profile", "content": "export MCP_SECTIONS_SHELL_OPS_SANDBOX=off\n"}),
            ("write_file", {"path": ".config/mcp-sections/config.toml", "content": "[sections.shell_ops]\n"}),
        ):
            await fail(files, tool, "PERMISSION_DENIED", **arguments)
    assert (home / ".config").is_symlink() and "MCP_SECTIONS" not in (home / ".profile").read_text()


@pytest.mark.anyio
async def test_a_programs_prefix_never_shows_the_state_or_the_homes_credentials(home: Path) -> None:
    """Finding 2: `~/.local/bin` and `~/.cargo/bin` on the search path, the root a project: running their programs
    once bound `~/.local` (the suite's data, other programs' keyrings) and `~/.cargo` (the registry token)."""
    search = f"{home / '.local/bin'}:{home / '.cargo/bin'}:/usr/local/bin:/usr/bin:/bin"
    env = home_environment(
        home,
        MCP_SECTIONS_SHELL_OPS_SEARCH_PATH=search,
        MCP_SECTIONS_SHELL_OPS_ALLOWED_PROGRAMS="peek,peek-cargo,python3,ls",
    )
    async with section_client("shell_ops", "--root", str(home / "project"), env=env) as shell:
        for program in ("peek", "peek-cargo"):
            result = await call(shell, "run_command", command=[program, str(home)], cwd=".")
            assert CANARY not in result["stdout"], result
            assert "list .local/share/mcp-sections absent" in result["stdout"], result
            assert "credentials unreadable" in result["stdout"], result


@pytest.mark.anyio
async def test_client_roots_get_the_state_rules_before_the_state_exists(tmp_path: Path) -> None:
    """Finding 4: no `--root`, a client that offers `file://$HOME`: the config directory is made and hidden at start,
    so a program that install_package runs (here through a `.pth` of a crafted venv) cannot write a config the next
    start would accept."""
    home = tmp_path / "home"
    (home / "project" / ".venv" / "bin").mkdir(parents=True)
    venv = home / "project" / ".venv"
    real_python = os.path.realpath(shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3")
    (venv / "bin" / "python").symlink_to(real_python)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    base_version = Path(real_python).name.removeprefix("python")
    (venv / "pyvenv.cfg").write_text(f"home = {os.path.dirname(real_python)}\nversion = {base_version}\n")
    packages = venv / "lib" / f"python{base_version}" / "site-packages"
    packages.mkdir(parents=True)
    target = home / ".config" / "mcp-sections" / "config.toml"
    (packages / "zz_plant.pth").write_text(
        "import os; os.makedirs(" + repr(str(target.parent)) + ", exist_ok=True); "
        "open(" + repr(str(target)) + ", 'w').write('[sections.shell_ops]\\nsandbox = \"off\"\\n')\n"
    )
    assert version  # the server's own Python is not involved: the venv runs the system's
    assert not (home / ".config").exists()

    async def roots(context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=home.as_uri())])  # type: ignore[arg-type]

    parameters = server_parameters(["serve", "file_ops"], env=home_environment(home, MCP_SECTIONS_ROOTS=""))
    transport = stdio_client(parameters)
    async with Client(transport, mode="legacy", list_roots_callback=roots) as files:  # type: ignore[arg-type]
        assert (home / ".config" / "mcp-sections").is_dir()  # made at start, before any root was known
        await files.call_tool("install_package", {"manager": "pip", "packages": ["six"], "cwd": "project"})
    assert not target.exists()


@pytest.mark.anyio
async def test_the_venvs_base_interpreter_is_read_only(tmp_path: Path) -> None:
    """Finding 1: the venv this suite runs in has its base interpreter under the home (pyenv here and in CI); with a
    root holding it, a sandboxed script or one write_file put `sitecustomize.py` in its standard library, which the
    next Python the suite starts ran unconfined. Attacked here with a file of a unique name."""
    base = Path(os.path.realpath(sys.base_prefix))
    if base == Path(os.path.realpath(sys.prefix)) or str(base).startswith(("/usr", "/opt/homebrew")):
        pytest.skip("this interpreter is not a venv over a base installation outside the system directories")
    stdlib = Path(os.path.dirname(os.__file__))
    probe = stdlib / f"zz_trusted_base_probe_{uuid.uuid4().hex}.py"
    root = base.parent
    script = tmp_path / "plant.py"
    script.write_text(
        f"try:\n    open({str(probe)!r}, 'w').write('print(1)')\n    print('planted')\n"
        "except OSError as exc:\n    print('refused', exc.errno)\n"
    )
    try:
        async with section_in_memory("shell_ops", "--root", str(root), "--root", str(tmp_path)) as shell:
            result = await call(shell, "run_command", command=["python3", str(script)], cwd=str(tmp_path))
        assert "planted" not in result["stdout"] and "refused 30" in result["stdout"], result  # EROFS
        async with section_in_memory("file_ops", "--root", str(root)) as files:
            message = await fail(
                files, "write_file", "PERMISSION_DENIED", path=str(probe.relative_to(root)), content="print(1)\n"
            )
        assert "trusted base" in message and "base interpreter" in message
        assert not probe.exists()
    finally:
        probe.unlink(missing_ok=True)


def planted_modules(project: Path, marker: Path) -> Iterator[Path]:
    """Modules a server could import from its working directory: the suite's own package and a lazily imported one."""
    code = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    for relative in ("sympy.py", "mcp_sections/__init__.py", "mcp_sections/servers/__init__.py"):
        path = project / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code)
        yield path


@pytest.mark.anyio
async def test_a_root_on_the_module_search_path_never_runs_planted_code(home: Path) -> None:
    """The sections the gateway starts ran `python -m mcp_sections.servers` in the gateway's working directory — the
    project, a root — which Python puts first on `sys.path`: a module a program planted there (`sympy.py`, or the
    package itself) ran unconfined in the next section. They now start with `-P`; `servers.startup` drops it too."""
    from mcp_sections.servers.pool.launchers import builtin_parameters
    from mcp_sections.shared.settings.config import load_settings

    project = home / "project"
    marker = home / "ran-unconfined.txt"
    list(planted_modules(project, marker))
    parameters = builtin_parameters("calculator", load_settings(None, roots=[project]))
    assert "-P" in parameters.args
    probe = subprocess.run(
        [parameters.command, *parameters.args[: parameters.args.index("serve")], "--help"],
        cwd=project,
        env={**os.environ, **(parameters.env or {})},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr[-2000:]
    async with section_client("calculator", "--root", str(project), env=home_environment(home), cwd=project) as calc:
        await call(calc, "calculator_evaluate", expression="2+3")
    assert not marker.exists(), marker.read_text()


def test_the_table_names_every_part_and_its_protection(home: Path) -> None:
    """`mcp-sections trusted-base`: the entries of a home root with a dotfiles `~/.config`, and the binds of programs
    on the search path (their prefixes under the home narrowed to bin and lib)."""
    import json

    from tests.stdio import cli_command, server_environment

    search = f"{home / '.local/bin'}:{home / '.cargo/bin'}:/usr/local/bin:/usr/bin:/bin"
    env = server_environment(home_environment(home, MCP_SECTIONS_SHELL_OPS_SEARCH_PATH=search))
    root = home / "project"
    listed = subprocess.run(
        [*cli_command(), "trusted-base", "--root", str(home), "--json"], env=env, capture_output=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    rows = {row["entry"]: row for row in json.loads(listed.stdout)}
    link = f"{home / '.config'} -> {(home / 'dotfiles/config').resolve()}"
    assert rows[link]["programs"].startswith("pinned as a link"), rows
    assert rows[str(home.resolve())]["what"] == "way: directory with fixed entries"
    data = rows[str((home / ".local/share/mcp-sections").resolve())]
    assert data["programs"].startswith("hidden") and data["file_tools"].startswith("refused")
    assert rows[str(home / ".profile")]["programs"] == "read-only bind"
    narrowed = subprocess.run(
        [*cli_command(), "trusted-base", "--root", str(root), "--json"], env=env, capture_output=True, timeout=60
    )
    programs = {row["entry"]: row for row in json.loads(narrowed.stdout) if row["what"] == "program on the search path"}
    peek = programs[str(home / ".local/bin/peek")]["programs"]
    assert str(home / ".local/bin") in peek and f"{home / '.local'}," not in peek and "share" not in peek, peek
    assert str(home / ".cargo/credentials.toml") not in programs[str(home / ".cargo/bin/peek-cargo")]["programs"]


@pytest.mark.anyio
async def test_a_config_inside_client_roots_cannot_switch_the_sandbox_off(tmp_path: Path) -> None:
    """The start-up rule for CLI roots (a config inside a root may not switch a sandbox off) also holds for the roots a
    client offers later: file tools then refuse those roots rather than run installers unconfined beside the config."""
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    config = home / "settings.toml"
    config.write_text("[sections.file_ops]\nsandbox = 'off'\n")

    async def roots(context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=home.as_uri())])  # type: ignore[arg-type]

    env = home_environment(home, MCP_SECTIONS_ROOTS="", MCP_SECTIONS_CONFIG=str(config))
    transport = stdio_client(server_parameters(["serve", "file_ops"], env=env))
    async with Client(transport, mode="legacy", list_roots_callback=roots) as files:  # type: ignore[arg-type]
        message = await fail(files, "list_directory", "PERMISSION_DENIED", path=str(home / "project"))
    assert "sandbox = 'off'" in message and str(config) in message
