"""Installs get a registry, not the network (issue #20).

The red team's reproducers: a `.pth` file in the project's `.venv` (installing runs project code by nature) reached a
service on 127.0.0.1 because the installer ran with the host network; and when `.venv/bin/python` linked to a folder
outside the roots, the sandbox bound that folder read-only and the `.pth` printed the secrets beside it.

Here the installer's only way out is the egress proxy, which opens the configured registries alone (a stand-in PEP 503
index on 127.0.0.1, configured on purpose); a canary on another loopback port must see nothing, the install itself
must work, and a venv whose interpreter link leads to an unverified folder shows nothing of it.
"""

from __future__ import annotations

import base64
import hashlib
import io
import shutil
import socket
import subprocess
import sys
import threading
import zipfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from mcp import Client

from tests.http_stand_in import ScriptedHandler, serving
from tests.in_memory import section_in_memory
from tests.stdio import data_of

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin") is None, reason="bubblewrap is not installed"
)
SECRET = "beside-the-interpreter-3f19"
PACKAGE = "egress-canary-pkg"


def wheel() -> tuple[str, bytes]:
    """A minimal pure-Python wheel of PACKAGE, built in memory."""
    name, version = PACKAGE.replace("-", "_"), "0.1"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": b"VALUE = 42\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = (
        "".join(
            f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}\n"
            for path, data in files.items()
        )
        + f"{name}-{version}.dist-info/RECORD,,\n"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
        archive.writestr(f"{name}-{version}.dist-info/RECORD", record)
    return f"{name}-{version}-py3-none-any.whl", buffer.getvalue()


@pytest.fixture(scope="module")
def registry() -> Iterator[str]:
    filename, data = wheel()

    class Index(ScriptedHandler):
        def do_GET(self) -> None:
            if self.path.rstrip("/") == f"/simple/{PACKAGE}":
                self.answer_bytes(200, f'<a href="/files/{filename}">{filename}</a>'.encode())
            elif self.path == f"/files/{filename}":
                self.answer_bytes(200, data, "application/octet-stream")
            else:
                self.send_error(404)

    with serving(Index) as port:
        yield f"http://127.0.0.1:{port}/simple"


@pytest.fixture(scope="module")
def canary() -> Iterator[tuple[int, list[bytes]]]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    seen: list[bytes] = []

    def accept() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            seen.append(connection.recv(4096) or b"(connected)")
            connection.close()

    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()[1], seen
    listener.close()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, canary: tuple[int, list[bytes]]) -> Path:
    root = tmp_path_factory.mktemp("install-egress") / "root"
    project = root / "app"
    project.mkdir(parents=True)
    subprocess.run([sys.executable, "-m", "venv", str(project / ".venv")], check=True, timeout=120)
    site = next((project / ".venv" / "lib").glob("python3.*/site-packages"))
    port = canary[0]
    reach = (  # runs at every start of the venv's interpreter: the installer's own
        "import socket\n"
        "for target in (('127.0.0.1', PORT), ('localhost', PORT)):\n"
        "    try: socket.create_connection(target, timeout=1).sendall(b'direct')\n"
        "    except OSError: pass\n"
        "try:\n"
        "    import http.client\n"
        "    c = http.client.HTTPConnection('127.0.0.1', 3128, timeout=2)\n"
        "    c.request('GET', 'http://127.0.0.1:PORT/via-proxy'); c.getresponse()\n"
        "except Exception: pass\n"
    ).replace("PORT", str(port))
    (site / "reach.py").write_text(reach)
    (site / "zz_reach.pth").write_text("import reach\n")
    return root


@pytest.fixture(scope="module")
async def files(project: Path, registry: str) -> AsyncIterator[Client]:
    env = {"MCP_SECTIONS_FILE_OPS_INSTALL_REGISTRIES": registry, "PIP_INDEX_URL": registry}
    async with section_in_memory("file_ops", "--root", str(project), env=env) as client:
        yield client


@pytest.mark.anyio
async def test_the_installer_reaches_its_registry_and_nothing_else(
    files: Client, project: Path, canary: tuple[int, list[bytes]]
) -> None:
    result = data_of(await files.call_tool("install_package", {"manager": "pip", "packages": [PACKAGE], "path": "app"}))
    assert result["sandbox"] == "bubblewrap" and result["exit_code"] == 0
    installed = list((project / "app" / ".venv" / "lib").glob(f"python3.*/site-packages/{PACKAGE.replace('-', '_')}"))
    assert installed, result["output"]
    assert canary[1] == [], canary[1]  # neither directly (no network) nor through the proxy (not a registry)
    assert any(f":{canary[0]}" in entry for entry in result["blocked"]), result["blocked"]


@pytest.mark.anyio
async def test_an_interpreter_link_out_of_the_roots_shows_nothing_beside_it(
    files: Client, project: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside") / "prefix"
    (outside / "bin").mkdir(parents=True)
    (outside / "secret.txt").write_text(SECRET)
    fake = outside / "bin" / "python"
    fake.write_text(f"#!/bin/sh\ncat {outside / 'secret.txt'}\n")
    fake.chmod(0o755)
    venv = project / "linked" / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {outside / 'bin'}\n")
    (venv / "bin" / "python").symlink_to(fake)
    result = await files.call_tool("install_package", {"manager": "pip", "packages": [PACKAGE], "path": "linked"})
    assert SECRET not in str(result.content) and SECRET not in str(result.structured_content)


@pytest.fixture(scope="module")
async def shell(project: Path, registry: str) -> AsyncIterator[Client]:
    env = {"MCP_SECTIONS_SHELL_OPS_INSTALL_REGISTRIES": registry, "PIP_INDEX_URL": registry}
    async with section_in_memory("shell_ops", "--root", str(project), env=env) as client:
        yield client


@pytest.mark.anyio
async def test_an_installer_run_command_starts_has_the_same_way_out(
    shell: Client, project: Path, canary: tuple[int, list[bytes]]
) -> None:
    """Issue #38: `pip install` through run_command goes through the same egress (shared.confinement.installers) as
    install_package: its registry, nothing else — and the same venv's interpreter started by any other command has no
    network at all."""
    result = data_of(
        await shell.call_tool(
            "run_command", {"command": ["python", "-m", "pip", "install", "--force-reinstall", PACKAGE], "cwd": "app"}
        )
    )
    assert result["sandbox"] == "bubblewrap" and result["exit_code"] == 0, result
    assert canary[1] == [], canary[1]
    assert any(f":{canary[0]}" in entry for entry in result["blocked"]), result["blocked"]
    plain = data_of(await shell.call_tool("run_command", {"command": ["python", "-c", "print(1)"], "cwd": "app"}))
    assert plain["stdout"] == "1\n" and plain["blocked"] == [] and canary[1] == [], (plain, canary[1])
