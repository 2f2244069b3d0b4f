"""What `BrainStore.schema` answers, the same on every backend: each label and relationship type of `model` with
its count (0 when none), each label's properties, and how many nodes have a vector or a text to embed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_sections.shared.brain.model import LABEL_PROPERTIES, LABELS, RELATIONSHIPS


def schema_answer(
    labels: Mapping[str, int], relationships: Mapping[str, int], vectors: int, embeddable: int
) -> dict[str, Any]:
    """The schema from a backend's counts per label and per relationship type (types it did not count are 0)."""
    return {
        "labels": {label: int(labels.get(label, 0)) for label in LABELS},
        "relationships": {rel: int(relationships.get(rel, 0)) for rel in RELATIONSHIPS},
        "properties": {label: list(LABEL_PROPERTIES[label]) for label in LABELS},
        "vectors": int(vectors),
        "embeddable": int(embeddable),
    }
