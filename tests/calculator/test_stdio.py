"""The calculator over stdio, through the real CLI and the official `mcp` client: its tools/list snapshot and a
call (what the tools do is in test_tools.py, in memory); a 200×200 literal through the transport to the worker; a
cold start that imports no sympy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_sections.servers.calculator.operations import UNARY_OPS
from tests.calculator.helpers import literal
from tests.stdio import annotation_hints, call, check_tools_snapshot, data_of, fail, section_client, text_of

TOOLS = {
    "calculator_unary",
    "calculator_binary",
    "calculator_constant",
    "calculator_evaluate",
    "calculator_simplify",
    "calculator_solve",
    "calculator_differentiate",
    "calculator_integrate",
    "calculator_convert_units",
}


@pytest.mark.anyio
async def test_tools_list_snapshot_and_annotations(tmp_path: Path) -> None:
    async with section_client("calculator", "--data-dir", str(tmp_path / "data")) as client:
        tools = (await client.list_tools()).tools
        assert (await call(client, "calculator_binary", operation="pow", a=2, b=10))["result"] == 1024
    check_tools_snapshot("calculator", tools)
    assert {t.name for t in tools} == TOOLS
    hints = annotation_hints(tools)
    for t in tools:
        assert t.annotations is not None
        assert hints[t.name] == (True, False, True, False), t.name
        assert t.output_schema is not None and t.description and len(t.description) > 60
    unary = next(t for t in tools if t.name == "calculator_unary")
    assert unary.input_schema["properties"]["operation"]["enum"] == list(UNARY_OPS)


@pytest.mark.anyio
async def test_float64_linear_algebra_at_200_in_the_worker(tmp_path: Path) -> None:
    """numpy runs in the sandboxed worker (memory cap on); a 200×200 literal travels over stdio."""
    known = literal([["1.01" if i == j else "0.01" for j in range(200)] for i in range(200)])  # det 3
    async with section_client("calculator", "--data-dir", str(tmp_path / "data")) as client:
        result = await client.call_tool("calculator_evaluate", {"expression": f"det({known})"})
        data, text = data_of(result), text_of(result)
        assert data["float64"] and data["value"] == pytest.approx(3, rel=1e-12) and len(text) < 1200
        data = await call(client, "calculator_evaluate", expression=f"inv({known})")
        assert data["shape"] == [200, 200] and 0 < data["rows_shown"] < 200
        assert float(data["matrix"][0][0]) == pytest.approx(1 - 1 / 300)
        message = await fail(client, "calculator_evaluate", "VALIDATION_FAILED", expression="inv([[1.0, 2], [2, 4]])")
        assert "singular" in message


def test_start_up_imports_no_sympy() -> None:
    """Importing the section and answering tools/list must not import sympy (cold start)."""
    script = """
import asyncio, json, sys
from mcp_sections.shared.settings.config import Settings
from mcp_sections.servers.registry import load_section
from mcp_sections.shared.serving.server import build_server
section = load_section("calculator")
server, _ = build_server(section, section.runtime(Settings.load()))
tools = asyncio.run(server.list_tools())
heavy = sorted(name for name in sys.modules if name.split(".")[0] in ("sympy", "mpmath"))
print(json.dumps({"tools": len(tools), "heavy": heavy}))
"""
    output = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True, cwd=Path.cwd()
    ).stdout
    report = json.loads(output.strip().splitlines()[-1])
    assert report == {"tools": len(TOOLS), "heavy": []}
