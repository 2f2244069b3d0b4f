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


def test_each_section_names_its_own_extra_with_this_installations_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """rag_ops' embedding needs are fixed by the rag extra (not memory's), with the installer this copy came from."""
    import importlib.util

    from mcp_sections.shared.ground.install_hints import install_command

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "numpy" else real(name, *a))
    for section, extra in (("rag_ops", "rag"), ("memory", "memory")):
        report = doctor.check_section(section)
        assert report.status == "unavailable"
        numpy_line = next(line for line in report.problems if "'numpy'" in line)
        assert install_command(extra) in numpy_line, numpy_line
