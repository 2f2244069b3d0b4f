"""The suite's own internal exceptions derive from `SuiteError`, keeping the bases their callers catch them by."""

from __future__ import annotations

import importlib

import pytest

from mcp_sections.shared.ground.errors import ConfigError, SuiteError

#: (module, class, the other bases callers catch it by)
INTERNAL_ERRORS = [
    ("mcp_sections.shared.ground.errors", "ConfigError", ()),
    ("mcp_sections.shared.serving.http_auth", "AuthConfigError", (ConfigError, ValueError)),
    ("mcp_sections.shared.embeddings.onnx", "EmbeddingModelUnavailable", (RuntimeError,)),
    ("mcp_sections.shared.embeddings.settings", "EmbeddingUnavailable", (RuntimeError,)),
    ("mcp_sections.shared.embeddings.remote", "RemoteEmbeddingError", (RuntimeError,)),
    ("mcp_sections.servers.file_ops.ripgrep", "RipgrepUnavailable", ()),
    ("mcp_sections.servers.file_ops.states", "TooLarge", ()),
    ("mcp_sections.servers.shell_ops.processes", "SpawnError", ()),
    ("mcp_sections.servers.web_ops.extraction", "UnsupportedContent", (ValueError,)),
    ("mcp_sections.servers.registry", "UnknownSection", (LookupError,)),
    ("mcp_sections.servers.calculator.workers", "WorkerError", (RuntimeError,)),
    ("mcp_sections.servers.calculator.workers", "WorkerTimeout", (TimeoutError,)),
    ("mcp_sections.servers.calculator.workers", "WorkerMemoryError", (MemoryError,)),
]


@pytest.mark.parametrize(("module", "name", "bases"), INTERNAL_ERRORS, ids=[item[1] for item in INTERNAL_ERRORS])
def test_internal_errors_derive_from_suite_error(module: str, name: str, bases: tuple[type, ...]) -> None:
    error = getattr(importlib.import_module(module), name)
    assert issubclass(error, SuiteError)
    for base in bases:
        assert issubclass(error, base), f"{name} is no longer caught as {base.__name__}"
    raised = error("what to fix")
    assert str(raised) == "what to fix"


def test_no_two_internal_errors_share_a_name() -> None:
    names = [name for _, name, _ in INTERNAL_ERRORS]
    assert len(names) == len(set(names))
    for module in ("mcp_sections.shared.embeddings.onnx", "mcp_sections.servers.file_ops.ripgrep"):
        assert not hasattr(importlib.import_module(module), "Unavailable")
