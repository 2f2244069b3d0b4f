"""`mcp-sections doctor`: real probes on this machine, and what it says when something is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_sections.servers import doctor
from mcp_sections.servers.registry import load_section
from mcp_sections.shared.framework.requirements import Requirement, module, program
from mcp_sections.shared.settings.config import Settings


def rag_runtime(**table: object):  # type: ignore[no-untyped-def]
    section = load_section("rag_ops")
    return section.runtime(Settings.load({"sections": {"rag_ops": table}}))


def neo4j_reachable(**table: object) -> str | None:
    from mcp_sections.servers.rag_ops.section import neo4j_reachable as probe

    return probe(rag_runtime(**table))


def test_a_missing_program_makes_the_section_unavailable_and_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_sections.shared.confinement import sandbox

    monkeypatch.setattr(sandbox.shutil, "which", lambda *args, **kwargs: None)
    report = doctor.check_section("shell_ops")
    assert report.status == "unavailable"
    assert any("apt-get install bubblewrap" in line for line in report.problems)


def test_an_optional_miss_only_degrades(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    todo = load_section("todo")
    slow = Requirement("a fast engine", program("no-such-program-xyz"), "install it", optional=True)
    monkeypatch.setattr(
        "mcp_sections.servers.doctor.load_section", lambda _: dataclasses.replace(todo, requirements=(slow,))
    )
    report = doctor.check_section("todo")
    assert report.status == "degraded" and report.hints == ["program 'no-such-program-xyz' not found — install it"]


def test_missing_python_module_is_reported() -> None:
    assert module("no_such_module_xyz")(None) == "Python module 'no_such_module_xyz' is not installed"  # type: ignore[arg-type]
    assert module("json")(None) is None  # type: ignore[arg-type]


def test_neo4j_is_probed_only_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_SECTIONS_RAG_OPS_BACKEND", raising=False)
    monkeypatch.delenv("NEO4J_URI", raising=False)
    assert neo4j_reachable() is None
    assert neo4j_reachable(backend="neo4j") == "backend = neo4j but NEO4J_URI is not set"  # from the config file
    monkeypatch.setenv("MCP_SECTIONS_RAG_OPS_BACKEND", "neo4j")
    assert neo4j_reachable() == "backend = neo4j but NEO4J_URI is not set"  # or the environment


def test_render_lists_every_section() -> None:
    text = doctor.render(doctor.check_all(["calculator", "todo"]))
    assert text.splitlines()[0].startswith("SECTION") and "calculator" in text and "todo" in text


def test_neo4j_reads_its_password_from_the_secret_file_the_compose_service_mounts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("neo4j", reason="the rag extra brings the neo4j driver")
    monkeypatch.setenv("MCP_SECTIONS_RAG_OPS_BACKEND", "neo4j")
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:1")
    monkeypatch.delenv("NEO4J_PASSWORD", raising=False)
    monkeypatch.setenv("NEO4J_PASSWORD_FILE", str(tmp_path / "missing"))
    assert "NEO4J_PASSWORD_FILE cannot be read" in (neo4j_reachable() or "")
    (tmp_path / "secret").write_text("s3cret-value\n", encoding="utf-8")
    monkeypatch.setenv("NEO4J_PASSWORD_FILE", str(tmp_path / "secret"))
    problem = neo4j_reachable() or ""
    assert "cannot reach Neo4j" in problem and "s3cret-value" not in problem  # read, used, never shown


def test_the_embedding_model_is_named_by_the_memory_extra_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """memory and rag_ops answer without the model (text search): degraded, saying so, and the fix names the memory
    extra in both, as the embedder's own note does (rag_ops' grammars keep the rag extra)."""
    import importlib.util

    from mcp_sections.shared.ground.install_hints import install_command

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "numpy" else real(name, *a))
    for section in ("rag_ops", "memory"):
        report = doctor.check_section(section)
        assert report.status == "degraded" and any("text search only" in what for what in report.works)
        numpy_line = next(line for line in report.hints if "'numpy'" in line)
        assert install_command("memory") in numpy_line and install_command("rag") not in numpy_line, numpy_line


def test_each_fix_is_said_once_after_every_miss_it_mends(monkeypatch: pytest.MonkeyPatch) -> None:
    """Six missing modules of one extra: one line naming them all, one install command (it was one line each)."""
    import importlib.util

    from mcp_sections.shared.ground.install_hints import install_command

    pytest.importorskip("huggingface_hub", reason="the memory extra: the test takes six of its modules away")
    gone = {"numpy", "onnxruntime", "tokenizers", "onnx", "safetensors", "sympy", "mpmath"}
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in gone else real(name, *a))
    report = doctor.check_section("memory")
    text = doctor.render([report])
    assert text.count(install_command("memory")) == 1, text
    assert "Python modules 'numpy', 'onnxruntime', 'tokenizers', 'onnx', 'safetensors' are not installed" in text
    calculator = doctor.check_section("calculator")
    assert calculator.status == "degraded" and calculator.works == [
        "the float tools only (calculator_unary, calculator_binary, calculator_constant)"
    ]
    assert len(calculator.hints) == 1 and "'sympy', 'mpmath', 'numpy'" in calculator.hints[0]


def test_huggingface_hub_is_listed_with_the_runtime_modules_and_the_model_line_carries_no_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A light install: the runtime modules, huggingface_hub and the carrier missing. huggingface_hub is a module of
    the memory extra like the others: one line names them all with the memory extra's command; the model's line says
    where the model would come from, with the offline extra's command only (a probe carries no command: the memory
    command was said twice, then patched into "the memory extra brings it")."""
    import importlib.util

    from mcp_sections.shared.embeddings.default_model import CARRIER, REVISION
    from mcp_sections.shared.embeddings.requirements import ONNX_MODULES
    from mcp_sections.shared.ground.install_hints import install_command

    gone = {*ONNX_MODULES, "huggingface_hub", CARRIER[2]}
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in gone else real(name, *a))
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # never asked: huggingface_hub is missing
    for section in ("memory", "rag_ops"):
        text = doctor.render([doctor.check_section(section)])
        assert text.count(install_command("memory")) == 1, text
        assert text.count(install_command("memory-offline")) == 1, text
        [modules] = [line for line in text.splitlines() if install_command("memory") in line]  # the memory extra's
        assert "'safetensors', 'huggingface_hub' are not installed" in modules, modules  # (rag_ops: also the rag one)
        [model] = [line for line in text.splitlines() if "huggingface_hub, which downloads it" in line]
        assert f"downloads it from http://127.0.0.1:9 at its pinned revision {REVISION[:12]}" in model, model
        assert model.split(" — ")[1].startswith(f"run: {install_command('memory-offline')}"), model


def test_huggingface_hub_alone_missing_gets_the_memory_command_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """huggingface_hub alone missing (the runtime modules there): its own line gives the memory extra's command, the
    model's line the offline extra's."""
    import importlib.util

    from mcp_sections.shared.embeddings.default_model import CARRIER
    from mcp_sections.shared.embeddings.requirements import ONNX_MODULES
    from mcp_sections.shared.ground.install_hints import install_command

    for name in ONNX_MODULES:
        pytest.importorskip(name, reason="the memory extra: the test takes huggingface_hub alone away")
    real = importlib.util.find_spec
    gone = {"huggingface_hub", CARRIER[2]}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in gone else real(name, *a))
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    report = doctor.check_section("memory")
    module_line, model_line = report.hints
    assert module_line.startswith("Python module 'huggingface_hub' is not installed — "), module_line
    assert install_command("memory") in module_line.split(" — ")[1], module_line
    assert install_command("memory-offline") in model_line.split(" — ")[1], model_line
    assert doctor.render([report]).count(install_command("memory")) == 1, report.hints


def test_huggingface_hub_is_not_asked_for_when_the_model_is_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the model's files on this machine, huggingface_hub is not needed: no line names it."""
    import importlib.util

    from mcp_sections.shared.embeddings import default_model

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "huggingface_hub" else real(name, *a)
    )
    monkeypatch.setattr(default_model, "local_copy", lambda _dir: object())
    report = doctor.check_section("memory")
    assert not any("huggingface_hub" in line for line in report.hints + report.problems), report


def test_web_ops_names_every_module_its_tools_import(monkeypatch: pytest.MonkeyPatch) -> None:
    """fetch_web_page imports regex (URL filters): doctor names it with the rest of the web extra, once."""
    import importlib.util

    for name in ("lxml", "html_to_markdown", "protego", "regex", "playwright", "pypdf", "ddgs"):
        pytest.importorskip(name, reason="the web extra: the test takes one of its modules away")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "regex" else real(name, *a))
    report = doctor.check_section("web_ops")
    assert report.status == "unavailable" and report.problems[0].startswith("Python module 'regex' is not installed")


def test_a_browser_is_asked_for_only_once_playwright_is_there(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without playwright the one web line names it; the Chromium check (which would name the same command) waits."""
    import importlib.util

    for name in ("lxml", "html_to_markdown", "protego", "regex", "playwright", "pypdf", "ddgs"):
        pytest.importorskip(name, reason="the web extra: the test takes one of its modules away")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "playwright" else real(name, *a))
    report = doctor.check_section("web_ops")
    assert report.status == "degraded"
    assert report.works == ["pages fetched over HTTP only (render='http'; no JavaScript)"]
    assert len(report.hints) == 1 and "'playwright'" in report.hints[0], report.hints


def test_orchestration_needs_a_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its sub-agent tools answer DEPENDENCY_ERROR without a model: degraded; ready once [gateway.model] names one."""
    for name in ("PROVIDER", "MODEL", "SAMPLING"):
        monkeypatch.delenv(f"MCP_SECTIONS_GATEWAY_MODEL_{name}", raising=False)
    report = doctor.check_section("orchestration", Settings.load({}))
    assert report.status == "degraded" and "[gateway.model]" in report.hints[0]
    assert report.works == ["ask_user and the listings only (spawn_agent, delegate_task, parallel_tasks need a model)"]
    monkeypatch.setenv("MCP_SECTIONS_GATEWAY_MODEL_PROVIDER", "openai")
    monkeypatch.setenv("MCP_SECTIONS_GATEWAY_MODEL_MODEL", "qwen2.5:14b")
    assert doctor.check_section("orchestration", Settings.load({})).status == "ready"


def test_media_ops_says_which_providers_are_unset() -> None:
    unset = doctor.check_section("media_ops", Settings.load({}))
    unset_line = "vision_provider, vision_model, image_base_url, mesh_base_url are not set"
    assert any(unset_line in line for line in unset.hints)
    table = {
        "vision_provider": "openai",
        "vision_model": "m",
        "image_base_url": "http://a",
        "mesh_base_url": "http://b",
    }
    ready = doctor.check_section("media_ops", Settings.load({"sections": {"media_ops": table}}))
    assert not any("not set" in line for line in ready.hints)


def test_every_optional_need_says_what_works_without_it() -> None:
    from mcp_sections.servers.registry import all_sections

    for section in all_sections():
        for requirement in section.requirements:
            assert not requirement.optional or requirement.without, (section.id, requirement.what)
