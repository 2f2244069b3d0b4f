"""In-process tests of the gateway's parts: project info, argument checks, settings, providers, catalog."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from mcp_sections.servers.gateway.context import git_info, is_within, project_info
from mcp_sections.servers.pool.catalog import build_catalog, declaration_definitions
from mcp_sections.servers.pool.settings import GatewaySettings, ModelSettings, load_gateway_settings
from mcp_sections.servers.pool.validation import validate_arguments
from mcp_sections.servers.registry import BUILTIN_SECTIONS
from mcp_sections.shared.agents.providers import Message, ToolCall, ToolDef, provider_from_config
from mcp_sections.shared.ground.errors import ToolFailure
from mcp_sections.shared.settings.config import ConfigError, load_settings
from tests.gateway.helpers import builtin_available
from tests.rag_ops.trees import sqlparse_tree
from tests.shell_ops.repos import git, make_repo

# -- project info ------------------------------------------------------------------------------------


def test_a_dynamic_version_is_read_from_the_file_the_build_backend_names(tmp_path: Path) -> None:
    """sqlparse's `[tool.hatch.version] path`: an outside tester saw `version: null` (the brain already read it)."""
    info = project_info(sqlparse_tree(tmp_path))
    assert (info["name"], info["version"], info["version_source"]) == ("sqlparse", "0.6.1", "sqlparse/__init__.py")


def test_project_types_names_versions(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "1.2.3"\n')
    (tmp_path / "package.json").write_text('{"name": "front", "version": "9.0.0"}')
    info = project_info(tmp_path)
    assert info["type"] == "python" and info["types"] == ["python", "node"]
    assert (info["name"], info["version"]) == ("pkg", "1.2.3")
    rust = tmp_path / "rust"
    rust.mkdir()
    (rust / "Cargo.toml").write_text('[package]\nname = "crab"\nversion = "0.3.0"\n')
    assert (project_info(rust)["type"], project_info(rust)["name"], project_info(rust)["version"]) == (
        "rust",
        "crab",
        "0.3.0",
    )
    go = tmp_path / "go"
    go.mkdir()
    (go / "go.mod").write_text("module example.com/gopher\n\ngo 1.22\n")
    assert project_info(go)["name"] == "example.com/gopher" and project_info(go)["type"] == "go"
    java = tmp_path / "java"
    java.mkdir()
    (java / "pom.xml").write_text("<project><artifactId>beans</artifactId><version>2.0</version></project>")
    assert (project_info(java)["name"], project_info(java)["version"]) == ("beans", "2.0")
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "setup.cfg").write_text("[metadata]\nname = old-pkg\nversion = 0.9\n")
    assert (project_info(legacy)["name"], project_info(legacy)["version"]) == ("old-pkg", "0.9")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert project_info(empty)["type"] == "unknown" and project_info(empty)["name"] == "empty"
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "pyproject.toml").write_text("not = [toml")
    assert project_info(tmp_path / "broken")["type"] == "python"


def test_git_branch_detached_head_and_worktree(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (repo / "sub").mkdir()
    assert git_info(repo / "sub") == {"root": str(repo), "branch": "main", "detached": False, "commit": None}
    (repo / ".git" / "HEAD").write_text("a" * 40 + "\n")
    assert git_info(repo)["detached"] is True and git_info(repo)["commit"] == "a" * 40
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (repo / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (repo / ".git" / "worktrees" / "wt" / "HEAD").write_text("ref: refs/heads/topic\n")
    (worktree / ".git").write_text(f"gitdir: {repo / '.git' / 'worktrees' / 'wt'}\n")
    assert git_info(worktree)["branch"] == "topic"


def test_git_commit_of_a_branch_from_loose_and_packed_refs_in_repositories_and_worktrees(tmp_path: Path) -> None:
    """What `git rev-parse HEAD` says, read from the files real git wrote (issue #23: commit was null on a branch)."""
    repo = make_repo(tmp_path / "repo")
    assert git_info(repo)["commit"] is None  # a branch without commits yet
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "first")
    first = git(repo, "rev-parse", "HEAD").strip()
    assert git_info(repo) == {"root": str(repo), "branch": "main", "detached": False, "commit": first}
    git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert git_info(repo)["commit"] == first  # from packed-refs
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    second = git(repo, "rev-parse", "HEAD").strip()
    assert git_info(repo)["commit"] == second  # the loose ref wins over the packed one
    git(repo, "worktree", "add", "-q", "-b", "topic", str(tmp_path / "wt"), first)
    assert git_info(tmp_path / "wt") == {
        "root": str(tmp_path / "wt"),
        "branch": "topic",
        "detached": False,
        "commit": first,
    }
    git(repo, "pack-refs", "--all")
    assert git_info(tmp_path / "wt")["commit"] == first  # packed-refs of the common directory
    git(repo, "checkout", "-q", "--detach", "HEAD")
    assert git_info(repo) == {"root": str(repo), "branch": None, "detached": True, "commit": second}
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/alias\n")
    (repo / ".git" / "refs" / "heads" / "alias").write_text("ref: refs/heads/main\n")  # a symbolic ref
    assert git_info(repo)["commit"] == second


def test_git_refs_outside_the_allowed_files_are_not_read(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "commit", "-q", "--allow-empty", "-m", "first")
    git(repo, "worktree", "add", "-q", "-b", "topic", str(tmp_path / "inside" / "wt"))
    inside = tmp_path / "inside"
    wt_git = Path((inside / "wt" / ".git").read_text().split(":", 1)[1].strip())

    def only_inside_and_its_git_dir(path: Path) -> bool:  # the worktree's own git dir, not the common one
        return is_within(path.resolve(), [inside.resolve(), wt_git.resolve()])

    info = git_info(inside / "wt", only_inside_and_its_git_dir)
    assert info is not None and info["branch"] == "topic" and info["commit"] is None
    for hostile in ("refs/heads/../../../outside", "refs/heads//x", "HEAD", "/etc/passwd"):
        (repo / ".git" / "HEAD").write_text(f"ref: {hostile}\n")
        assert git_info(repo)["commit"] is None, hostile


# -- argument checks ---------------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "maxLength": 5},
        "tags": {"type": "array", "items": {"type": "string"}},
        "mode": {"enum": ["a", "b"]},
        "count": {"type": "integer", "minimum": 1},
    },
}


def test_validation_names_each_wrong_field_without_echoing_values() -> None:
    assert validate_arguments("t", SCHEMA, {"name": "ok", "tags": '["x"]'}) == {"name": "ok", "tags": ["x"]}
    with pytest.raises(ToolFailure) as caught:
        validate_arguments("t", SCHEMA, {"name": "secret-value", "mode": "c", "count": 0, "extra": 1})
    message = caught.value.message
    assert caught.value.code.value == "INVALID_INPUT"
    for expected in (
        "name: must be at most 5 characters long",
        'mode: must be one of "a", "b"',
        "count: must be >= 1",
        "extra: unknown argument",
    ):
        assert expected in message
    assert "secret-value" not in message
    assert caught.value.details["fields"] == ["count", "extra", "mode", "name"]  # the unknown one by its name
    with pytest.raises(ToolFailure, match="name: required argument is missing") as caught:
        validate_arguments("t", SCHEMA, {})
    assert caught.value.details["fields"] == ["name"]


def test_every_choice_is_listed_or_counted_and_the_closest_named() -> None:
    """A list cut at 20 values read as the whole (an outside tester): `sign`, `degrees`, `radians` looked invalid."""
    names = [f"op{n:03d}" for n in range(23)] + ["sqrt"]
    schema = {"type": "object", "properties": {"op": {"enum": names}}, "additionalProperties": False}
    with pytest.raises(ToolFailure) as caught:
        validate_arguments("t", schema, {"op": "sqrtt"})
    assert '"op022", "sqrt" (did you mean "sqrt"?)' in caught.value.message, caught.value.message
    many = {"type": "object", "properties": {"op": {"enum": [f"v{n}" for n in range(100)]}}}
    with pytest.raises(ToolFailure, match=r'"v59" and 40 more \(see the tool\'s input schema\)'):
        validate_arguments("t", many, {"op": "zzz"})


# -- settings ----------------------------------------------------------------------------------------


def test_gateway_settings_from_file_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        "[gateway]\nexpose = ['todo']\nmax_depth = 2\n"
        "[gateway.model]\nprovider = 'anthropic'\nmodel = 'claude-x'\napi_key_env = 'MY_KEY'\n"
        "[gateway.sections.web]\nurl = 'http://127.0.0.1:9/mcp'\nname = 'Web'\n"
    )
    monkeypatch.setenv("MCP_SECTIONS_GATEWAY_MAX_SUBAGENTS", "5")
    monkeypatch.setenv("MCP_SECTIONS_GATEWAY_MODEL_MODEL", "claude-y")
    settings = load_gateway_settings(load_settings(config))
    assert settings.expose == ["todo"] and settings.max_depth == 2 and settings.max_subagents == 5
    assert settings.model.provider == "anthropic" and settings.model.model == "claude-y"
    assert settings.sections["web"].url == "http://127.0.0.1:9/mcp"
    overridden = load_gateway_settings(load_settings(config), expose=["memory"], max_depth=1)
    assert overridden.expose == ["memory"] and overridden.max_depth == 1
    config.write_text("[gateway.sections.bad]\ncommand = 'x'\nurl = 'http://x'\n")
    with pytest.raises(ConfigError, match="exactly one of"):
        load_gateway_settings(load_settings(config))


def test_catalog_lists_builtins_then_third_party_in_order() -> None:
    settings = GatewaySettings.load({"sections": {"zeta": {"command": "x"}, "alpha": {"url": "http://h/mcp"}}})
    catalog = build_catalog(settings)
    assert list(catalog) == [*BUILTIN_SECTIONS, "alpha", "zeta"]
    assert catalog["alpha"].kind == "http" and catalog["zeta"].kind == "stdio"
    assert catalog["alpha"].declared_tools is None


@pytest.mark.skipif(not builtin_available("todo"), reason="the todo section is not importable")
def test_declared_definitions_equal_the_sections_own_tools_list() -> None:
    from mcp_sections.servers.cli import tool_definitions
    from mcp_sections.servers.registry import load_section
    from mcp_sections.shared.settings.config import Settings

    assert declaration_definitions(load_section("todo"), Settings.load()) == tool_definitions("todo")


# -- providers ---------------------------------------------------------------------------------------

TOOLS = [ToolDef(name="demo_sum", description="Add.", input_schema={"type": "object"})]
CONVERSATION = [
    Message(role="user", content="Add 1 and 2"),
    Message(
        role="assistant", content="", tool_calls=[ToolCall(id="c1", name="demo_sum", arguments={"numbers": [1, 2]})]
    ),
    Message(role="tool", tool_call_id="c1", name="demo_sum", content="total = 3"),
]


def _recording(answer: dict[str, Any], seen: list[httpx2.Request], status: int = 200) -> httpx2.MockTransport:
    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(status, json=answer)

    return httpx2.MockTransport(handle)


@pytest.mark.anyio
async def test_openai_compatible_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_KEY", "k-123")
    config = ModelSettings.load(
        {"provider": "openai", "model": "m", "base_url": "http://h/v1", "api_key_env": "LOCAL_KEY"}
    )
    seen: list[httpx2.Request] = []
    answer = {
        "choices": [
            {
                "message": {
                    "content": None,
                    "tool_calls": [{"id": "c2", "function": {"name": "demo_sum", "arguments": '{"numbers": [3]}'}}],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 4},
    }
    turn = await provider_from_config(config, _recording(answer, seen)).complete("sys", CONVERSATION, TOOLS)
    assert turn.tool_calls == [ToolCall(id="c2", name="demo_sum", arguments={"numbers": [3]})]
    assert (turn.tokens_input, turn.tokens_output) == (12, 4)
    request = seen[0]
    assert str(request.url) == "http://h/v1/chat/completions" and request.headers["authorization"] == "Bearer k-123"
    body = json.loads(request.content)
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool"]
    assert body["messages"][2]["tool_calls"][0]["function"]["arguments"] == '{"numbers": [1, 2]}'
    assert body["tools"][0]["function"]["name"] == "demo_sum"


@pytest.mark.anyio
async def test_anthropic_provider_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_TEST_KEY", "sk-ant-secret")
    config = ModelSettings.load({"provider": "anthropic", "model": "claude", "api_key_env": "ANTHROPIC_TEST_KEY"})
    seen: list[httpx2.Request] = []
    answer = {
        "content": [{"type": "text", "text": "The total is 3 [demo_sum]."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 30, "output_tokens": 9},
    }
    turn = await provider_from_config(config, _recording(answer, seen)).complete("sys", CONVERSATION, TOOLS)
    assert turn.text == "The total is 3 [demo_sum]." and not turn.tool_calls and turn.tokens_input == 30
    request = seen[0]
    assert str(request.url) == "https://api.anthropic.com/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-secret" and request.headers["anthropic-version"]
    body = json.loads(request.content)
    assert body["system"] == "sys" and body["tools"][0]["input_schema"] == {"type": "object"}
    assert body["messages"][1]["content"][0]["type"] == "tool_use"
    assert body["messages"][2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "c1",
        "content": "total = 3",
        "is_error": False,
    }
    refused = provider_from_config(config, _recording({"error": {"message": "bad key"}}, [], status=401))
    with pytest.raises(ToolFailure) as caught:
        await refused.complete("sys", CONVERSATION, TOOLS)
    assert caught.value.code.value == "DEPENDENCY_ERROR" and "ANTHROPIC_TEST_KEY" in caught.value.message
    assert "sk-ant-secret" not in caught.value.message


def test_missing_model_or_key_says_how_to_configure(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ToolFailure) as caught:
        provider_from_config(ModelSettings.load({}))
    assert "[gateway.model]" in caught.value.message and "MCP_SECTIONS_GATEWAY_MODEL_PROVIDER" in caught.value.message
    monkeypatch.delenv("ABSENT_KEY", raising=False)  # an unset key is no error until the endpoint wants one
    assert provider_from_config(ModelSettings.load({"provider": "openai", "model": "m", "api_key_env": "ABSENT_KEY"}))


@pytest.mark.anyio
async def test_max_depth_zero_hides_plan_actions() -> None:
    from mcp_sections.servers.gateway.server import build_gateway_server
    from mcp_sections.shared.settings.config import Settings

    server, gateway = build_gateway_server(Settings.load(), GatewaySettings.load({}, max_depth=0))
    names = [tool.name for tool in await server.list_tools()]
    assert "plan_actions" not in names and names[0] == "list_tool_sections"
    assert "plan_actions" not in gateway.own_tool_names()


def test_argument_checker_is_built_once_and_explains_only_failures() -> None:
    from mcp_sections.servers.pool.validation import ArgumentChecker

    checker = ArgumentChecker("t", SCHEMA)
    assert checker.check({"name": "ok", "tags": '["x"]'}) == {"name": "ok", "tags": ["x"]}
    with pytest.raises(ToolFailure, match="name: required argument is missing"):
        checker.check({})
    broken = ArgumentChecker("t", {"type": "no-such-type"})  # the section judges the call itself
    assert broken.check({"anything": 1}) == {"anything": 1}


def test_gateway_start_imports_no_section_and_no_jsonschema() -> None:
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from mcp_sections.servers.gateway.server import build_gateway_server\n"
        "from mcp_sections.servers.pool.settings import GatewaySettings\n"
        "from mcp_sections.shared.settings.config import Settings\n"
        "build_gateway_server(Settings.load(), GatewaySettings.load({}))\n"
        "loaded = [m for m in sys.modules if m == 'jsonschema' or m.startswith('mcp_sections.servers.')]\n"
        "composition = ('mcp_sections.servers.gateway', 'mcp_sections.servers.pool', 'mcp_sections.servers.registry')\n"
        "print(sorted(m for m in loaded if not m.startswith(composition)))\n"
    )
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "[]"


def test_lean_schemas_accept_and_refuse_what_the_pydantic_ones_do() -> None:
    from jsonschema import Draft202012Validator

    from mcp_sections.servers.gateway.core import GATEWAY_SPECS
    from mcp_sections.shared.framework.schemas import lean_schema

    plan = GATEWAY_SPECS["plan_actions"]
    full_in, full_out = plan.input_model.model_json_schema(), plan.output_model.model_json_schema(mode="serialization")
    lean_in, lean_out = lean_schema(full_in), lean_schema(full_out, descriptions=False)
    assert "$defs" not in json.dumps(lean_in) + json.dumps(lean_out)
    assert '"title"' not in json.dumps(lean_in) + json.dumps(lean_out)
    inputs = [
        {"goal": "g", "sections": ["todo"]},
        {"goal": "g", "sections": ["todo"], "actions": None},
        {"goal": "g", "sections": ["todo"], "actions": [{"description": "d", "complexity": "simple"}]},
        {"goal": "g", "sections": ["todo"], "actions": [{"description": "d", "complexity": "huge"}]},
        {"goal": "g", "sections": ["Todo!"]},
        {"goal": "", "sections": ["todo"]},
        {"goal": "g", "sections": ["todo"], "depth": 2},
    ]
    outputs = [
        {"success": True, "report": "r", "metrics": {"turns": 1}, "actions": []},
        {"success": True, "report": "r", "metrics": {"turns": "1"}, "actions": []},
        {
            "success": False,
            "report": "r",
            "metrics": {},
            "actions": [
                {"description": "d", "complexity": "simple", "status": "terminated", "report": "", "metrics": {}}
            ],
        },
        {"success": True, "report": "r", "metrics": {}, "actions": [{"description": "d"}]},
    ]
    for full, lean, instances in ((full_in, lean_in, inputs), (full_out, lean_out, outputs)):
        for instance in instances:
            assert Draft202012Validator(full).is_valid(instance) == Draft202012Validator(lean).is_valid(instance)
