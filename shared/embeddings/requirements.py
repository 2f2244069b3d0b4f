"""What the sections that embed text (memory, rag_ops) need on the machine, for `mcp-sections doctor`."""

from __future__ import annotations

from typing import Any

from mcp_sections.shared.framework.requirements import InstallExtra, Requirement, module


def packaged_model(runtime: Any = None) -> str | None:
    """The default embedding model's files, from the package the memory extra brings."""
    from mcp_sections.shared.embeddings.embedder import bundled_model_dir

    return None if bundled_model_dir() is not None else "the packaged embedding model is not installed"


def embedding_requirements(extra: str) -> tuple[Requirement, ...]:
    """The default embedding model and its runtime (no torch: it runs on ONNX Runtime), installed by `extra`."""
    install = InstallExtra(extra)
    return (
        *(
            Requirement(name, module(name), install)
            for name in ("numpy", "onnxruntime", "tokenizers", "onnx", "safetensors")
        ),
        Requirement("the packaged embedding model", packaged_model, install),
    )
