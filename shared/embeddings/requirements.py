"""What the sections that embed text (memory, rag_ops) need on the machine, for `mcp-sections doctor`."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from mcp_sections.shared.embeddings import default_model
from mcp_sections.shared.embeddings.settings import BUNDLED_NAMES, EmbeddingSettings
from mcp_sections.shared.framework.requirements import InstallExtra, Requirement, installed, module

#: The Python modules the default model runs on (ONNX Runtime, no torch).
ONNX_MODULES = ("numpy", "onnxruntime", "tokenizers", "onnx", "safetensors")


def default_model_files(runtime: Any = None, extra: str = default_model.HUB_CLIENT_EXTRA) -> str | None:
    """The default model's files: on this machine (checked at load), or to be fetched from the hub at its pinned
    revision at the first load (the hub asked once, as doctor asks Neo4j); None when one of them applies (or another
    model, or an endpoint, is configured). A missing huggingface_hub that comes with `extra`, the extra of the runtime
    modules, is said without its install command when one of those modules is missing (their line says it)."""
    settings = getattr(runtime, "section_settings", None)
    if not isinstance(settings, EmbeddingSettings):
        settings = EmbeddingSettings()
    if settings.embedding_provider != "local" or settings.embedding_model.strip().lower() not in BUNDLED_NAMES:
        return None
    if settings.embedding_model_dir:  # then the only source
        if Path(settings.embedding_model_dir).expanduser().is_dir():
            return None
        return f"embedding_model_dir {settings.embedding_model_dir!r} is not a directory"
    if default_model.local_copy(None) is not None:
        return None
    missing = f"the default model {default_model.REPO} is not on this machine"
    if settings.embedding_allow_download is False or default_model.hub_offline():
        return f"{missing} and may not be downloaded (embedding_allow_download false or HF_HUB_OFFLINE set)"
    said_above = extra == default_model.HUB_CLIENT_EXTRA and not all(installed(name) for name in ONNX_MODULES)
    get_client = f"the {extra} extra brings it, with the modules above" if said_above else None
    if problem := default_model.hub_unreachable(default_model.hub_endpoint(), get_client):
        return f"{missing} and {problem}"
    return None  # fetched from the hub at the pinned revision, then checked, at the first load


def embedding_requirements(extra: str) -> tuple[Requirement, ...]:
    """The default embedding model and its runtime (no torch: it runs on ONNX Runtime), installed by `extra`; its
    files come from the hub at a pinned revision, or, offline, from the carrier package of `OFFLINE_EXTRA`."""
    install = InstallExtra(extra)
    return (
        *(Requirement(name, module(name), install) for name in ONNX_MODULES),
        Requirement(
            "the default embedding model",
            partial(default_model_files, extra=extra),
            InstallExtra(default_model.OFFLINE_EXTRA),
        ),
    )
