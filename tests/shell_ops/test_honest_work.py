"""Honest work on a real project, through the real server, sandbox and registry (issue #38, design point 7).

A coding agent does what a project's README says: a venv in a root, `pip install -e ".[test]"` with a pinned test
dependency, `pip install -r requirements.txt`, its tests (`pytest`, `pytest -o pythonpath=src`, `PYTHONPATH=src`), a
commit whose message has a body, a multi-line `python -c`. Each ran into an argv rule before; the OS sandbox confines
all of it now, and installs reach the package registries only, through the egress proxy
(`shared.confinement.installers`), the same for run_command and file_ops' install_package.

The installs download from PyPI (and the npm registry): `slow`.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from tests.in_memory import section_in_memory
from tests.shell_ops.repos import GIT_IDENTITY
from tests.stdio import call, fail

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin") is None, reason="bubblewrap is not installed"
    ),
]
INSTALL_TIMEOUT = 300

PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "greeter"
version = "0.1.0"
dependencies = []

[project.optional-dependencies]
test = ["pytest==8.3.3"]

[tool.setuptools.packages.find]
where = ["src"]
"""
GREETER = "def greet(name):\n    return f'hello {name}'\n"
GREETER_TEST = "from greeter import greet\n\n\ndef test_greet():\n    assert greet('you') == 'hello you'\n"
PLAIN_TEST = "from plainpkg import VALUE\n\n\ndef test_value():\n    assert VALUE == 42\n"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("honest-work")
    root = base / "root"
    project = root / "greeter"
    (project / "src" / "greeter").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "pyproject.toml").write_text(PYPROJECT)
    (project / "src" / "greeter" / "__init__.py").write_text(GREETER)
    (project / "tests" / "test_greet.py").write_text(GREETER_TEST)
    (project / "requirements.txt").write_text("six==1.16.0\n")
    (project / "requirements-more.txt").write_text("iniconfig==2.0.0\ntomli==2.0.1\n")
    plain = root / "plain"  # a src layout that is not installed: its tests need pythonpath=src
    (plain / "src" / "plainpkg").mkdir(parents=True)
    (plain / "tests").mkdir()
    (plain / "src" / "plainpkg" / "__init__.py").write_text("VALUE = 42\n")
    (plain / "tests" / "test_value.py").write_text(PLAIN_TEST)
    web = root / "web"
    web.mkdir()
    (web / "package.json").write_text(
        json.dumps({"name": "web", "version": "1.0.0", "dependencies": {"is-number": "7.0.0"}})
    )
    (base / "empty.toml").write_text("")
    return root


def server_env(root: Path) -> dict[str, str]:
    return {
        "MCP_SECTIONS_CONFIG": str(root.parent / "empty.toml"),
        "MCP_SECTIONS_DATA_DIR": str(root.parent / "data"),
        "MCP_SECTIONS_SHELL_OPS_GIT_AUTHOR_NAME": GIT_IDENTITY["GIT_AUTHOR_NAME"],
        "MCP_SECTIONS_SHELL_OPS_GIT_AUTHOR_EMAIL": GIT_IDENTITY["GIT_AUTHOR_EMAIL"],
        "MCP_SECTIONS_SHELL_OPS_MAX_TIMEOUT_SECONDS": str(INSTALL_TIMEOUT),
    }


@pytest.fixture(scope="module")
async def shell(root: Path) -> AsyncIterator[Client]:
    async with section_in_memory("shell_ops", "--root", str(root), env=server_env(root)) as client:
        yield client


@pytest.fixture(scope="module")
async def files(root: Path) -> AsyncIterator[Client]:
    async with section_in_memory("file_ops", "--root", str(root), env=server_env(root)) as client:
        yield client


async def run(shell: Client, command: list[str] | str, cwd: str, **arguments: object) -> dict:
    result = await call(shell, "run_command", command=command, cwd=cwd, **arguments)
    assert result["sandbox"] == "bubblewrap", result
    return result


@pytest.fixture(scope="module")
async def installed(shell: Client, root: Path) -> dict:
    """A venv made in the root, then the project installed the way its README says: `pip install -e ".[test]"`."""
    made = await run(shell, ["python3", "-m", "venv", "../.venv"], "greeter")
    assert made["exit_code"] == 0, made
    assert (root / ".venv" / "pyvenv.cfg").is_file()
    result = await run(shell, ["pip", "install", "-e", ".[test]"], "greeter", timeout_seconds=INSTALL_TIMEOUT)
    assert result["exit_code"] == 0, result
    return result


@pytest.mark.anyio
async def test_the_project_installs_editable_with_its_pinned_test_dependency(installed: dict, root: Path) -> None:
    assert installed["executable"] == str(root / ".venv" / "bin" / "pip")  # the venv's pip, found from cwd upwards
    assert installed["blocked"] == [], installed["blocked"]  # it needed the registry alone
    site = next((root / ".venv" / "lib").glob("python3.*/site-packages"))
    assert (site / "pytest-8.3.3.dist-info").is_dir()
    assert any(path.name.startswith("__editable__") for path in site.iterdir()), "not an editable install"


@pytest.mark.anyio
async def test_its_tests_run_against_the_editable_install(shell: Client, installed: dict, root: Path) -> None:
    tests = await run(shell, ["pytest", "-q", "-p", "no:cacheprovider"], "greeter")
    assert tests["exit_code"] == 0 and "1 passed" in tests["stdout"], tests
    (root / "greeter" / "src" / "greeter" / "__init__.py").write_text(GREETER.replace("hello", "hi"))
    try:  # editable: the change is what runs, no reinstall
        changed = await run(shell, ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"], "greeter")
        assert changed["exit_code"] == 1 and "hi you" in changed["stdout"], changed
    finally:
        (root / "greeter" / "src" / "greeter" / "__init__.py").write_text(GREETER)


@pytest.mark.anyio
async def test_pytest_options_and_variables_that_change_only_its_own_behaviour(shell: Client, installed: dict) -> None:
    missing = await run(shell, ["pytest", "-q", "-p", "no:cacheprovider"], "plain")
    assert missing["exit_code"] != 0 and "plainpkg" in missing["stdout"], missing
    option = await run(shell, ["pytest", "-q", "-p", "no:cacheprovider", "-o", "pythonpath=src"], "plain")
    assert option["exit_code"] == 0 and "1 passed" in option["stdout"], option
    variable = await run(shell, ["pytest", "-q", "-p", "no:cacheprovider"], "plain", env={"PYTHONPATH": "src"})
    assert variable["exit_code"] == 0 and "1 passed" in variable["stdout"], variable
    addopts = await run(
        shell, ["pytest", "-p", "no:cacheprovider"], "plain", env={"PYTEST_ADDOPTS": "-q -o pythonpath=src"}
    )
    assert addopts["exit_code"] == 0 and "1 passed" in addopts["stdout"], addopts


@pytest.mark.anyio
async def test_requirements_files_install_through_both_tools(
    shell: Client, files: Client, installed: dict, root: Path
) -> None:
    site = next((root / ".venv" / "lib").glob("python3.*/site-packages"))
    by_command = await run(
        shell, ["python", "-m", "pip", "install", "-r", "requirements.txt"], "greeter", timeout_seconds=INSTALL_TIMEOUT
    )
    assert by_command["exit_code"] == 0 and (site / "six.py").is_file(), by_command
    by_tool = await call(
        files,
        "install_package",
        manager="pip",
        packages=[".[test]"],
        editable=True,
        requirements=["requirements-more.txt"],
        path="greeter",
    )
    assert by_tool["sandbox"] == "bubblewrap" and by_tool["blocked"] == [], by_tool
    assert "-e" in by_tool["command"] and "-r" in by_tool["command"]
    assert (site / "tomli-2.0.1.dist-info").is_dir(), by_tool["output"]
    await fail(files, "install_package", "INVALID_INPUT", manager="pip", packages=["./no-such-project"], path="greeter")
    await fail(
        files, "install_package", "PERMISSION_DENIED", manager="pip", requirements=["/etc/passwd"], path="greeter"
    )


@pytest.mark.anyio
async def test_an_installer_reaches_the_registries_and_nothing_else(shell: Client, installed: dict) -> None:
    elsewhere = await run(
        shell,
        ["pip", "install", "--no-deps", "https://example.com/pkg-1.0.tar.gz"],
        "greeter",
        timeout_seconds=INSTALL_TIMEOUT,
    )
    assert elsewhere["exit_code"] != 0 and any("example.com" in entry for entry in elsewhere["blocked"]), elsewhere
    not_an_installer = await run(
        shell,
        ["python", "-c", "import urllib.request as u; u.urlopen('https://pypi.org/simple/', timeout=5)"],
        "greeter",
    )
    assert not_an_installer["exit_code"] != 0 and not_an_installer["blocked"] == [], not_an_installer


@pytest.mark.anyio
async def test_a_commit_message_with_a_body_survives(shell: Client, root: Path) -> None:
    assert (await run(shell, ["git", "init", "-q", "-b", "main"], "greeter"))["exit_code"] == 0
    await run(shell, ["git", "add", "pyproject.toml", "src"], "greeter")
    message = "Add the greeter\n\nIt greets by name.\n\n- a list item\n- another"
    committed = await run(shell, ["git", "commit", "-q", "-m", message], "greeter")
    assert committed["exit_code"] == 0, committed
    (root / "greeter" / "README.md").write_text("greeter\n")
    await run(shell, ["git", "add", "README.md"], "greeter")
    second = await run(shell, 'git commit -q -m "Add a README\n\nWith a body in the string form."', "greeter")
    assert second["exit_code"] == 0, second
    log = await call(shell, "git_log", cwd="greeter", max_count=2)
    assert [entry["subject"] for entry in log["entries"]] == ["Add a README", "Add the greeter"]
    assert log["entries"][1]["body"].strip() == "It greets by name.\n\n- a list item\n- another"
    assert log["entries"][0]["body"].strip() == "With a body in the string form."


@pytest.mark.anyio
async def test_a_multi_line_python_c(shell: Client) -> None:
    code = "import sys\nfor word in ('one', 'two'):\n    print(word)\nprint(sys.prefix.endswith('.venv'))"
    ran = await run(shell, ["python3", "-c", code], "plain")  # the venv's python3, found from cwd upwards
    assert ran["exit_code"] == 0 and ran["stdout"] == "one\ntwo\nTrue\n", ran


@pytest.mark.anyio
async def test_npm_installs_through_the_same_egress(shell: Client, root: Path) -> None:
    if shutil.which("npm", path="/usr/local/bin:/usr/bin:/bin") is None:
        pytest.skip("npm is not installed")
    first = await run(shell, ["npm", "install", "--no-audit", "--no-fund"], "web", timeout_seconds=INSTALL_TIMEOUT)
    assert first["exit_code"] == 0 and first["blocked"] == [], first
    assert (root / "web" / "node_modules" / "is-number" / "package.json").is_file()
    shutil.rmtree(root / "web" / "node_modules")
    clean = await run(shell, ["npm", "ci", "--no-audit", "--no-fund"], "web", timeout_seconds=INSTALL_TIMEOUT)
    assert clean["exit_code"] == 0 and (root / "web" / "node_modules" / "is-number").is_dir(), clean
