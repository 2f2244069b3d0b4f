"""doctor's verdict is what each section does on its first calls, on the full install (this environment) and on a
light one (a fresh virtual environment with the base package only): `python -m benchmarks.doctor_check --json`,
run in each, serves every section and makes its first calls (see its docstring). Besides the verdict: every Python
package a call asks for is named by doctor, each fix is said once, and the extra a call's message names is the one
doctor names for that section."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import pytest

from tests.stdio import REPO

NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"
)
ASKED_FOR = re.compile(r"needs the Python package '([^']+)'")
EXTRA = re.compile(r"\[([a-z][a-z-]*)\]'")
FIX = re.compile(r"— (.+)$")


def doctor_check(python: str, cwd: Path) -> list[dict[str, Any]]:
    """The JSON of `python -m benchmarks.doctor_check` run with `python` in `cwd` (a checkout)."""
    done = subprocess.run(
        [python, "-m", "benchmarks.doctor_check", "--json"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=cwd,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert done.stdout.strip().startswith("["), done.stderr[-3000:]
    return json.loads(done.stdout)


def table(checks: list[dict[str, Any]], install: str) -> str:
    lines = [f"{'INSTALL':<7} {'SECTION':<14} {'DOCTOR':<12} {'FIRST CALLS':<12} CALLS"]
    for item in checks:
        calls = ", ".join(f"{call['tool']}: {call['outcome']}" for call in item["calls"])
        lines.append(f"{install:<7} {item['section']:<14} {item['doctor']:<12} {item['does']:<12} {calls}")
    return "\n".join(lines)


def assert_doctor_tells_the_truth(checks: list[dict[str, Any]]) -> None:
    from mcp_sections.servers.registry import BUILTIN_SECTIONS

    assert [item["section"] for item in checks] == list(BUILTIN_SECTIONS)
    for item in checks:
        name, said = item["section"], item["doctor_text"]
        outcomes = {call["outcome"] for call in item["calls"]}
        assert outcomes <= {"works", "degraded", "DEPENDENCY_ERROR"}, (name, item["calls"])  # else: a wrong call
        assert item["doctor"] == item["does"], f"{name}: doctor says {item['doctor']}, it is {item['does']}\n{said}"
        fixes = [found.group(1) for line in said.splitlines() if (found := FIX.search(line))]
        assert len(fixes) == len(set(fixes)), f"{name}: a fix said twice\n{said}"
        for call in item["calls"]:
            for package in ASKED_FOR.findall(call["detail"]):
                assert repr(package) in said, f"{name}: {call['tool']} asks for {package!r}; doctor:\n{said}"
            for extra in EXTRA.findall(call["detail"]):
                assert f"[{extra}]'" in said, f"{name}: {call['tool']} names [{extra}]; doctor:\n{said}"


def test_doctor_says_what_the_first_calls_do_on_the_full_install() -> None:
    checks = doctor_check(sys.executable, REPO)
    print("\n" + table(checks, "full"))
    assert_doctor_tells_the_truth(checks)
    assert {item["section"]: item["doctor"] for item in checks}["calculator"] == "ready"


@pytest.mark.slow  # a fresh virtual environment filled from the package index (pip's cache): about a minute
def test_doctor_says_what_the_first_calls_do_on_a_light_install(tmp_path: Path) -> None:
    checkout = tmp_path / "mcp-sections"
    shutil.copytree(REPO, checkout, ignore=NOT_SOURCES, symlinks=True)
    venv.create(tmp_path / "env", with_pip=False)  # this environment's pip installs there: twice as fast as the
    python = str(tmp_path / "env" / "bin" / "python")  # pip a new venv bundles, and no ensurepip
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-compile", str(checkout)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    checks = doctor_check(python, checkout)
    print("\n" + table(checks, "light"))
    assert_doctor_tells_the_truth(checks)
    verdicts = {item["section"]: item["doctor"] for item in checks}
    assert verdicts["calculator"] == verdicts["memory"] == verdicts["rag_ops"] == "degraded"  # they answer
    assert verdicts["web_ops"] == verdicts["media_ops"] == "unavailable"
