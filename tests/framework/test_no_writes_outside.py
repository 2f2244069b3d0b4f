"""No test writes outside its temporary directories (issue #23): real server-starting tests, run by a nested pytest
whose HOME and XDG base directories are one empty directory, leave that directory empty.

The tests chosen start what once wrote there: a gateway started with only the MCP SDK's default environment, which
keeps HOME but none of the MCP_SECTIONS_* variables (its audit log went to the user's data directory), and a
third-party section the gateway starts with a narrow environment (the same). Chromium's profile files and ONNX
Runtime's device id (~/.cache/Microsoft) went there too; the same home directory of the run holds them now, but a
nested run with the embedding model or the browser would cost this test half a minute more.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.stdio import REPO

SERVER_STARTING_TESTS = (
    "tests/accountability/test_http_auth.py::test_the_gateway_reaches_a_token_protected_section",
    "tests/gateway/test_gateway.py::test_third_party_section_starts_on_use_and_forwards_progress",
)
USER_DIRECTORIES = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR")


def test_server_starting_tests_leave_an_empty_home_empty(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        **{name: str(home) for name in USER_DIRECTORIES},
    }
    options = ["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--basetemp", str(tmp_path / "basetemp")]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *options, *SERVER_STARTING_TESTS],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert f"{len(SERVER_STARTING_TESTS)} passed" in done.stdout, done.stdout[-3000:]
    written = sorted(str(path.relative_to(home)) for path in home.rglob("*"))
    assert written == [], written
