"""run_npm_script's preflight is the run's own check (`ShellOps.check_npm_script`): a call the run would refuse (a
lifecycle hook, another script's pre/post hook, a NUL in an argument, a package.json outside the roots) is refused
before the person is asked; a runnable script is asked about. In memory, approval on, a client with elicitation."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.in_memory import section_in_memory
from tests.orchestration.helpers import User
from tests.stdio import error_of

pytestmark = pytest.mark.anyio
SCRIPTS = {"hello": "echo hello", "prehello": "touch pre-hook-ran", "postinstall": "touch installed"}


async def test_a_script_call_the_run_refuses_is_refused_before_asking(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    for directory in (root / "pkg", root / "linked", outside):
        directory.mkdir(parents=True)
    (root / "pkg" / "package.json").write_text(json.dumps({"scripts": SCRIPTS}), encoding="utf-8")
    (outside / "package.json").write_text(json.dumps({"scripts": SCRIPTS}), encoding="utf-8")
    (root / "linked" / "package.json").symlink_to(outside / "package.json")
    refused = [
        ({"script": "postinstall", "cwd": "pkg"}, "PERMISSION_DENIED"),
        ({"script": "prehello", "cwd": "pkg"}, "PERMISSION_DENIED"),
        ({"script": "hello", "cwd": "pkg", "args": ["a\x00b"]}, "INVALID_INPUT"),
        ({"script": "hello", "cwd": "linked"}, "PERMISSION_DENIED"),
    ]
    user = User()
    args = ("--root", str(root), "--data-dir", str(tmp_path / "data"))
    env = {"MCP_SECTIONS_APPROVAL": "destructive", "MCP_SECTIONS_CONFIG": os.devnull}
    async with section_in_memory("shell_ops", *args, env=env, elicitation_callback=user) as client:
        for arguments, expected in refused:
            code, message = error_of(await client.call_tool("run_npm_script", arguments))
            assert code == expected and user.questions == [], (arguments, code, message)  # refused, never asked
        user.will("decline")
        code, message = error_of(await client.call_tool("run_npm_script", {"script": "hello", "cwd": "pkg"}))
        assert code == "PERMISSION_DENIED" and "declined run_npm_script" in message and len(user.questions) == 1
    assert not any((root / "pkg" / name).exists() for name in ("pre-hook-ran", "installed"))
