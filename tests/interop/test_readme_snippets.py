"""The README's "Use it from your own agent" programs, run as written: each block after a `<!-- snippet: NAME -->`
mark is saved as a file and run by Python in a project directory, with `OPENAI_BASE_URL` at a scripted model
(`tests/gateway/scripted_model.py`) that calls the calculator section's tool, then the same tool through the gateway's
`call_section_tool`, then answers. The model's second request holds what each framework handed it back.

pydantic-ai and the OpenAI Agents SDK run in this environment (the test-tools extra brings them); LangChain cannot
(langchain-mcp-adapters requires mcp<2): its program runs with the Python named by `INTEROP_LANGCHAIN_PYTHON`, an
environment of its own as the README says, and is skipped without one."""

from __future__ import annotations

import ast
import copy
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_types import Tool

from tests.gateway.scripted_model import Reply, Request, ScriptedModel
from tests.processes import serving_over_http
from tests.stdio import REPO, SNAPSHOTS, cli_command

README = REPO / "README.md"
EXPRESSION = "2^10 + sqrt(16)"
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("calculator_evaluate", {"expression": EXPRESSION}),
    (
        "call_section_tool",
        {"section": "calculator", "tool": "calculator_evaluate", "arguments": {"expression": EXPRESSION}},
    ),
]
ANSWER = "2^10 + sqrt(16) is 1028."
LANGCHAIN_PYTHON = os.environ.get("INTEROP_LANGCHAIN_PYTHON", "")


def installed(*modules: str) -> bool:
    return all(importlib.util.find_spec(module) is not None for module in modules)


needs_pydantic_ai = pytest.mark.skipif(
    not installed("pydantic_ai", "fastmcp", "openai"),
    reason="pydantic-ai is not installed: pip install -e '.[test-tools]' (pydantic-ai-slim[openai,mcp])",
)
needs_openai_agents = pytest.mark.skipif(
    not installed("agents", "openai"), reason="the OpenAI Agents SDK is not installed: pip install -e '.[test-tools]'"
)
needs_langchain = pytest.mark.skipif(
    not LANGCHAIN_PYTHON,
    reason="INTEROP_LANGCHAIN_PYTHON names no Python with langchain, langchain-openai and langchain-mcp-adapters "
    "(they need mcp<2: an environment of their own, README 'Use it from your own agent')",
)


def snippet(name: str) -> str:
    """The fenced Python block right after `<!-- snippet: name -->` in README.md."""
    found = re.search(
        rf"^<!-- snippet: {re.escape(name)} -->\n```python\n(.*?)^```$", README.read_text("utf-8"), re.M | re.S
    )
    assert found, f"README.md has no ```python block right after <!-- snippet: {name} -->"
    return found.group(1)


def over_http(program: str, http_line: str, port: int) -> str:
    """`program` with its stdio gateway replaced by `http_line` (same indentation), on `port`: the whole `gateway = …`
    statement however many lines ruff format gives it, else the one line (a dict entry of LangChain's servers)."""
    lines = program.splitlines()
    gateway = [index for index, line in enumerate(lines) if '"gateway", "--root"' in line]
    assert len(gateway) == 1, f"one line starts the gateway over stdio, not {len(gateway)}"
    first = last = gateway[0]
    for statement in ast.walk(ast.parse(program)):
        targets = statement.targets if isinstance(statement, ast.Assign) else []
        named = [target.id for target in targets if isinstance(target, ast.Name)]
        if named == ["gateway"] and statement.lineno - 1 <= first <= (statement.end_lineno or 0) - 1:
            first, last = statement.lineno - 1, (statement.end_lineno or statement.lineno) - 1
    indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
    lines[first : last + 1] = [indent + http_line.strip().replace("8765", str(port))]
    return "\n".join(lines) + "\n"


def script(request: Request) -> Reply:
    """The calculator's tool, the same through the gateway, then the answer; a tool not offered ends the run."""
    if request.turn < len(CALLS):
        tool, arguments = CALLS[request.turn]
        if tool not in request.tools:
            return Reply(text=f"{tool} was not offered: {request.tools}")
        return Reply(tool_calls=[(tool, arguments)])
    return Reply(text=ANSWER)


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel({"": script}) as scripted:
        yield scripted


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "README.md").write_text("# a project\n", encoding="utf-8")
    return tmp_path / "project"


def run(program: str, model: ScriptedModel, project: Path, python: str = sys.executable) -> str:
    """`program` run from `project` with the model at the scripted one (no other OPENAI* variable of ours) and this
    environment's `mcp-sections` first on PATH; its output."""
    path = project.parent / "agent.py"
    path.write_text(program, encoding="utf-8")
    environment = {
        **{name: value for name, value in os.environ.items() if not name.startswith("OPENAI")},
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": "scripted",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",  # the program turns tracing off itself; this only makes sure
        "PATH": f"{Path(cli_command()[0]).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    for name in ("PYTHONPATH", "VIRTUAL_ENV"):
        environment.pop(name, None)
    done = subprocess.run(
        [python, str(path)], cwd=project, env=environment, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{program}\nexited {done.returncode}:\n{done.stderr[-4000:]}"
    return done.stdout


def answered(
    name: str, program: str, transport: str, model: ScriptedModel, project: Path, python: str = sys.executable
) -> None:
    """`program` (the README's snippet `name`) run over `transport`: with "http", its stdio gateway replaced by the
    snippet `<name>-http`, at a gateway served for the run; it prints the answer."""
    if transport == "http":
        with serving_over_http(["gateway", "--root", str(project)]) as (port, _):
            output = run(over_http(program, snippet(f"{name}-http"), port), model, project, python)
    else:
        output = run(program, model, project, python)
    assert output.strip() == ANSWER


def text_of(content: Any) -> str:
    """A tool message's content: a string, or OpenAI's list of text parts."""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def returned(model: ScriptedModel) -> list[str]:
    """What the model was handed back for its two calls, as its last request held them."""
    results = [text_of(result) for result in model.requests[-1].tool_results]
    assert len(results) == len(CALLS), results
    return results


def structured(result: str) -> None:
    """A result the model read as the structured content: the calculator's fields."""
    data = json.loads(result)
    assert data["exact"] == "1028" and data["value"] == 1028, data


def enveloped(result: str) -> None:
    """A result the model read as the text, inside the provenance envelope."""
    assert re.search(r'^<data id="[0-9a-f]+" source="computation" tool="calculator_evaluate"', result), result
    assert "2^10 + sqrt(16) = 1028" in result, result


@needs_pydantic_ai
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_pydantic_ai(transport: str, model: ScriptedModel, project: Path) -> None:
    """pydantic-ai hands the model both results as their structured content."""
    answered("pydantic-ai", snippet("pydantic-ai"), transport, model, project)
    for result in returned(model):
        structured(result)


@needs_openai_agents
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_openai_agents(transport: str, model: ScriptedModel, project: Path) -> None:
    """The Agents SDK hands the model the calculator's structured content (`use_structured_content=True`) and the
    gateway's text, in its envelope."""
    answered("openai-agents", snippet("openai-agents"), transport, model, project)
    direct, through_gateway = returned(model)
    structured(direct)
    enveloped(through_gateway)


@needs_langchain
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_langchain(transport: str, model: ScriptedModel, project: Path) -> None:
    """LangChain, in its own environment, reaches this one's `mcp-sections` by its absolute path: the model reads
    both results' text, in its envelope."""
    placeholder = '"/path/to/mcp-sections/.venv/bin/mcp-sections"'
    program = snippet("langchain")
    assert placeholder in program
    program = program.replace(placeholder, json.dumps(cli_command()[0]))
    answered("langchain", program, transport, model, project, LANGCHAIN_PYTHON)
    for result in returned(model):
        enveloped(result)


@needs_openai_agents
def test_strict_schema_exceptions_are_the_readme_lists() -> None:
    """Among every tool of every section and the gateway (their tools/list snapshots), those the README says strict
    mode cannot express are those `ensure_strict_json_schema` refuses, and with the three it names after them, those
    the Agents SDK's own MCP conversion leaves non-strict."""
    strict_schema = pytest.importorskip("agents.strict_schema")
    mcp_util = pytest.importorskip("agents.mcp.util")
    # A server never started: the conversion only reads its settings.
    server = pytest.importorskip("agents.mcp").MCPServerStdio({"command": "mcp-sections"})
    tools = [tool for snapshot in sorted(SNAPSHOTS.glob("*.json")) for tool in json.loads(snapshot.read_text("utf-8"))]
    refused, sent_non_strict = set(), set()
    for tool in tools:
        try:
            strict_schema.ensure_strict_json_schema(copy.deepcopy(tool["inputSchema"]))
        except Exception:
            refused.add(tool["name"])
        converted = mcp_util.MCPUtil.to_function_tool(Tool.model_validate(tool), server, convert_schemas_to_strict=True)
        if not converted.strict_json_schema:
            sent_non_strict.add(tool["name"])
    text = README.read_text("utf-8")
    bullet = text[text.index("- **OpenAI's strict schemas.**") :].split("\n\n", 1)[0]
    names = {tool["name"] for tool in tools}
    before_sdk, sdk = bullet.split("With `mcp_config=", 1)
    assert len(tools) > 90
    assert {word for word in re.findall(r"`([a-z_]+)`", before_sdk) if word in names} == refused
    assert refused | {word for word in re.findall(r"`([a-z_]+)`", sdk) if word in names} == sent_non_strict
