"""A workflow id: the one definition of the name that scopes memories (memory) and tasks (todo).

Letters, digits, '_', '.', ':', '-', starting with a letter or digit; 1-128 characters. That was memory's rule, and it
already held every id todo accepted (todo allowed neither ':' nor more than 64 characters), so every id either
section stored keeps working. Tool inputs declare `WorkflowId` (each section adds its own description and default);
domain code checks with `check_workflow_id`.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field

from mcp_sections.shared.ground.errors import invalid_input

MAX_WORKFLOW_ID_LENGTH = 128
WORKFLOW_ID_PATTERN = rf"^[A-Za-z0-9][A-Za-z0-9_.:-]{{0,{MAX_WORKFLOW_ID_LENGTH - 1}}}$"
#: The rule in words, for descriptions and error messages.
WORKFLOW_ID_RULE = (
    f"1-{MAX_WORKFLOW_ID_LENGTH} characters: letters, digits, '_', '.', ':', '-', starting with a letter or digit"
)

WorkflowId = Annotated[str, Field(min_length=1, max_length=MAX_WORKFLOW_ID_LENGTH, pattern=WORKFLOW_ID_PATTERN)]

_WORKFLOW_ID = re.compile(WORKFLOW_ID_PATTERN)


def check_workflow_id(value: str) -> str:
    """`value` if it is a workflow id, else INVALID_INPUT saying what one is."""
    if not _WORKFLOW_ID.fullmatch(value):
        raise invalid_input(f"workflow_id {value[:140]!r} is not a workflow id: it must be {WORKFLOW_ID_RULE}.")
    return value
