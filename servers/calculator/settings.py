"""The settings of calculator: `[sections.calculator]` in the config file, `MCP_SECTIONS_CALCULATOR_*` in the
environment."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from mcp_sections.shared.settings.config import SectionSettings


class CalculatorSettings(SectionSettings):
    """`[sections.calculator]` in the config file, or `MCP_SECTIONS_CALCULATOR_*` in the environment."""

    env_prefix: ClassVar[str] = "MCP_SECTIONS_CALCULATOR_"

    timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="Wall-clock limit of one symbolic computation (the worker is restarted).",
    )
    memory_limit_mb: int = Field(
        default=1024, ge=0, description="Address-space cap of the sympy worker process in MiB (0: no cap)."
    )
    start_timeout_seconds: float = Field(
        default=60.0, gt=0, le=600, description="How long the worker may take to start and import sympy."
    )
