"""The suite's own state stays out of reach when a root contains it (found in the red-team round of issue #11).

With a root at the home directory, the data directory (audit log, databases), the cache and the config file
lie inside a root: file_ops could rewrite the audit log or set `sandbox = "off"` in the config, and a script
run by shell_ops could do the same. The path guard now treats them as outside every root, walks leave them
out, and the sandbox covers them with an empty tmpfs (a file with /dev/null).
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.confinement.sandbox import Confinement, Sandbox, seatbelt_profile
from mcp_sections.shared.text.walking import walk
from tests.in_memory import section_in_memory
from tests.stdio import call, fail

HAVE_BWRAP = shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin") is not None
CANARY = "own-state-canary-41c7"
PEEK = """
import pathlib
for place in (DATA, CONFIG_DIR):
    path = pathlib.Path(place)
    print("list", path.name, sorted(p.name for p in path.iterdir()) if path.is_dir() else "absent")
try:
    print("config", repr(pathlib.Path(CONFIG).read_text()))
except OSError as exc:
    print("config unreadable", type(exc).__name__)
"""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    home = tmp_path_factory.mktemp("own-state") / "home"
    data, cache, config_dir = home / ".local/share/mcp-sections", home / ".cache/mcp-sections", home / "settings"
    for directory in (data / "audit", cache, config_dir, home / "project"):
        directory.mkdir(parents=True)
    (data / "audit" / "old.jsonl").write_text(f'{{"tool": "{CANARY}"}}\n')
    config = config_dir / "config.toml"
    config.write_text(f"# {CANARY}\n")
    (home / "project" / "notes.txt").write_text(f"notes mention {CANARY} too\n")
    script = PEEK.replace("CONFIG_DIR", repr(str(config_dir))).replace("CONFIG", repr(str(config)))
    (home / "project" / "peek.py").write_text(script.replace("DATA", repr(str(data))))
    return {"home": home, "data": data, "cache": cache, "config": config}


def server_env(home: dict[str, Path]) -> dict[str, str]:
    return {
        "MCP_SECTIONS_DATA_DIR": str(home["data"]),
        "MCP_SECTIONS_CACHE_DIR": str(home["cache"]),
        "MCP_SECTIONS_CONFIG": str(home["config"]),
    }


@pytest.fixture(scope="module")
async def files(home: dict[str, Path]) -> AsyncIterator[Client]:
    async with section_in_memory("file_ops", "--root", str(home["home"]), env=server_env(home)) as client:
        yield client


@pytest.fixture(scope="module")
async def shell(home: dict[str, Path]) -> AsyncIterator[Client]:
    if not HAVE_BWRAP:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")
    async with section_in_memory("shell_ops", "--root", str(home["home"]), env=server_env(home)) as client:
        yield client


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("read_file", {"path": ".local/share/mcp-sections/audit/old.jsonl"}),
        ("list_directory", {"path": ".local/share/mcp-sections"}),
        ("write_file", {"path": ".local/share/mcp-sections/audit/file_ops.jsonl", "content": "{}"}),
        ("write_file", {"path": "settings/config.toml", "content": "[sections.shell_ops]\nsandbox = 'off'\n"}),
        ("read_file", {"path": "project/../settings/config.toml"}),
        ("delete_path", {"path": ".cache/mcp-sections"}),
        ("move_file", {"source": "project/notes.txt", "destination": ".cache/mcp-sections/notes.txt"}),
    ],
)
async def test_file_tools_refuse_the_suites_own_state(files: Client, tool: str, arguments: dict[str, str]) -> None:
    message = await fail(files, tool, "PERMISSION_DENIED", **arguments)
    assert "own state" in message


@pytest.mark.anyio
async def test_walks_over_the_home_root_leave_the_own_state_out(files: Client, home: dict[str, Path]) -> None:
    found = await call(files, "search_files", path=".", pattern=CANARY, include_hidden=True)
    assert [match["path"] for match in found["matches"]] == ["project/notes.txt"]
    globbed = await call(files, "glob_files", path=".", pattern="**/*.jsonl", include_hidden=True)
    assert globbed["matches"] == []
    assert (home["data"] / "audit" / "old.jsonl").read_text().count(CANARY) == 1


@pytest.mark.anyio
async def test_a_script_sees_the_own_state_empty_and_the_guard_refuses_naming_it(
    shell: Client, home: dict[str, Path]
) -> None:
    result = await call(shell, "run_command", command=["python3", "peek.py"], cwd="project")
    assert result["sandbox"] == "bubblewrap"
    # the data directory is an empty tmpfs; the config file (a custom one here) is covered by /dev/null
    assert "list mcp-sections []" in result["stdout"] and "list settings ['config.toml']" in result["stdout"]
    assert CANARY not in result["stdout"] and "config unreadable" in result["stdout"], result
    message = await fail(
        shell, "run_command", "PERMISSION_DENIED", command=["cat", "../settings/config.toml"], cwd="project"
    )
    assert "own state" in message
    listed = await call(shell, "run_command", command=["find", "..", "-name", "*.jsonl"], cwd="project")
    assert listed["stdout"].strip() == ""


def test_the_guard_and_walker_in_isolation(tmp_path: Path) -> None:
    tmp_path = tmp_path / "root"
    data = tmp_path / "data"
    (data / "audit").mkdir(parents=True)
    (tmp_path / "keep.txt").write_text("x")
    guard = PathGuard([tmp_path], private=[data, data / "audit", tmp_path / "missing-config.toml"])
    assert not guard.contains(data / "audit") and guard.contains(tmp_path / "keep.txt")
    assert guard.private_inside_roots() == (data.resolve(), (tmp_path / "missing-config.toml").resolve())
    names = [entry.rel for entry in walk(str(tmp_path), hidden=guard.private_inside_roots())]
    assert names == ["keep.txt"]
    assert guard.with_roots([tmp_path]).private == guard.private


def test_both_sandboxes_hide_the_own_state(tmp_path: Path) -> None:
    data, config = tmp_path / "data", tmp_path / "config.toml"
    data.mkdir()
    config.write_text("x")
    confinement = Confinement(writable=(tmp_path,), hidden=(data, config))
    argv = Sandbox("bubblewrap", "/usr/bin/bwrap").wrap(["/usr/bin/true"], tmp_path, confinement)
    after_binds = " ".join(argv[argv.index(str(tmp_path)) :])
    assert f"--tmpfs {data}" in after_binds and f"--ro-bind /dev/null {config}" in after_binds
    profile = seatbelt_profile("/usr/bin/true", confinement)
    assert profile.rstrip().splitlines()[-1].startswith("(deny file-read* file-write*") and str(data) in profile


def test_the_brain_never_ingests_the_own_state(tmp_path: Path) -> None:
    from mcp_sections.servers.rag_ops.brain import Brain
    from mcp_sections.shared.brain.model import EntityFilter
    from mcp_sections.shared.brain.sqlite_backend import SQLiteBrainStore

    home = tmp_path / "home"
    data = home / "state"
    (data / "audit").mkdir(parents=True)
    (data / "audit" / "calls.md").write_text(f"# {CANARY}\n")
    (home / "app.py").write_text("def main():\n    return 1\n")
    brain = Brain(SQLiteBrainStore(data / "brain.sqlite3"), [home], background_embeddings=False, private=[data])
    try:
        with pytest.raises(Exception, match="own state"):
            brain.ingest_directory(str(data))
        report = brain.ingest_directory(str(home))
        nodes, _ = brain.store.query_entities(EntityFilter(label="File", project_ids=[report.project_id], limit=100))
        assert {node.path for node in nodes} == {"app.py"}
    finally:
        brain.close()
