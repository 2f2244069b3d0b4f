"""Issue #38, finding 5, through the suite's own sandbox: run_command, start_process and install_package's programs."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tests.in_memory import section_in_memory
from tests.stdio import call

ATTACK = """
import os, shutil
shutil.copy("/usr/bin/python3", "py")
for mode in (0o4755, 0o2755):
    try:
        os.chmod("py", mode)
    except PermissionError:
        print("refused", oct(mode))
"""


@pytest.mark.anyio
async def test_run_command_leaves_no_setuid_file(tmp_path: Path) -> None:
    (tmp_path / "attack.py").write_text(ATTACK, encoding="utf-8")
    async with section_in_memory("shell_ops", "--root", str(tmp_path)) as client:
        result = await call(client, "run_command", command=["python3", "attack.py"])
    assert result["stdout"].split() == ["refused", "0o4755", "refused", "0o2755"]
    assert not (tmp_path / "py").stat().st_mode & (stat.S_ISUID | stat.S_ISGID)
