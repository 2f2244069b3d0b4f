"""CONTRIBUTING.md's checklist, followed once: a tiny section made in a temporary folder plus one registry line is
served, listed by the gateway, called through it, checked by doctor, and the container check says what to add."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from mcp_sections.servers import registry
from mcp_sections.shared.settings.config import Settings

SECTION_PY = '''
"""A tiny example section: echo a text back."""

from pydantic import Field

from mcp_sections.shared.framework.requirements import Requirement, module
from mcp_sections.shared.framework.sections import Container, Section
from mcp_sections.shared.framework.tools import READ_ONLY, ToolInput, ToolResult, tool


class EchoInput(ToolInput):
    text: str = Field(description="What to echo.", max_length=1000)


class EchoResult(ToolResult):
    text: str


@tool(
    name="example_echo",
    title="Echo a text",
    annotations=READ_ONLY,
    examples=("repeat what I say", "echo this sentence back"),
)
def example_echo(params: EchoInput) -> EchoResult:
    """Return `text` unchanged."""
    return EchoResult(text=params.text)


SECTION = Section(
    id="example",
    name="Example",
    description="Echoes texts (the checklist of CONTRIBUTING.md, followed once).",
    tools=(example_echo,),
    requirements=(Requirement("json", module("json"), "nothing to install"),),
    output_source="echo",
    container=Container(),
)
'''


@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    package = tmp_path / "example_pkg"
    package.mkdir()
    (package / "__init__.py").write_text('"""The example section."""\n')
    (package / "section.py").write_text(textwrap.dedent(SECTION_PY))
    monkeypatch.syspath_prepend(str(tmp_path))
    # the one registry line
    monkeypatch.setitem(registry.BUILTIN_SECTIONS, "example", "example_pkg.section")
    yield "example"
    sys.modules.pop("example_pkg.section", None)
    sys.modules.pop("example_pkg", None)


@pytest.mark.anyio
async def test_a_section_is_its_folder_plus_one_registry_line(example: str, tmp_path: Path) -> None:
    from mcp_sections.servers import doctor
    from mcp_sections.servers.gateway.server import build_gateway_server
    from mcp_sections.servers.pool.settings import GatewaySettings
    from mcp_sections.shared.serving.server import build_server
    from tests.containers.test_containers import compose_service, dockerfile_stanza, gateway_table
    from tests.stdio import data_of, text_of

    section = registry.load_section(example)
    settings = Settings.load({"data_dir": str(tmp_path / "data"), "warm_up": False})
    server, _ = build_server(section, section.runtime(settings))
    async with Client(server) as client:  # served on its own
        result = await client.call_tool("example_echo", {"text": "hello"})
        assert data_of(result) == {"text": "hello"} and text_of(result) == '{"text": "hello"}'
        assert 'source="echo"' in result.content[0].text  # type: ignore[union-attr]
    gateway_server, _ = build_gateway_server(settings, GatewaySettings.load({"in_process": ["example"]}))
    async with Client(gateway_server) as gateway:  # found by the gateway, called through it
        listed = data_of(await gateway.call_tool("list_tool_sections", {}))
        assert any(entry["id"] == "example" and entry["tools"] == ["example_echo"] for entry in listed["sections"])
        forwarded = {"section": "example", "tool": "example_echo", "arguments": {"text": "hi"}}
        assert data_of(await gateway.call_tool("call_section_tool", forwarded)) == {"text": "hi"}
    assert doctor.check_section("example", settings).status == "ready"
    assert "FROM runtime AS example" in dockerfile_stanza(section)
    assert "target: example" in compose_service(section) and "[gateway.sections.example]" in gateway_table("example")
