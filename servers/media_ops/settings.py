"""`[sections.media_ops]` in the config file, or `MCP_SECTIONS_MEDIA_OPS_*`."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator

from mcp_sections.shared.settings.config import SectionSettings, split_commas


class MediaOpsSettings(SectionSettings):
    """Limits of the local work, and the providers that describe and generate (none configured by default)."""

    env_prefix: ClassVar[str] = "MCP_SECTIONS_MEDIA_OPS_"

    max_image_pixels: int = Field(
        default=40_000_000, ge=1_000_000, le=400_000_000, description="Images above this are refused before decoding."
    )
    max_image_bytes: int = Field(default=50_000_000, ge=100_000, le=500_000_000, description="Largest file read.")
    preview_max_side: int = Field(
        default=1024, ge=128, le=4096, description="Images returned to the client are downscaled to this side."
    )
    max_mesh_bytes: int = Field(default=100_000_000, ge=100_000, le=1_000_000_000, description="Largest 3D file.")
    vision_provider: Literal["openai", "anthropic"] | None = Field(
        default=None, description="describe_image's model: an OpenAI-compatible or Anthropic endpoint (else sampling)."
    )
    vision_model: str | None = Field(default=None, description="Model name for describe_image.")
    vision_base_url: str | None = Field(default=None, description="Endpoint base URL (default: the provider's).")
    vision_api_key_env: str | None = Field(default=None, description="NAME of the variable holding its key.")
    image_base_url: str | None = Field(
        default=None, description="An OpenAI-compatible images API (`POST {base}/images/generations`)."
    )
    image_model: str = Field(default="gpt-image-1", description="Model name sent to the images API.")
    image_api_key_env: str | None = Field(default=None, description="NAME of the variable holding its key.")
    mesh_base_url: str | None = Field(
        default=None,
        description="A 3D job API (TRELLIS / Hunyuan3D style): POST {base}/jobs, GET {base}/jobs/{id}, then the GLB.",
    )
    mesh_api_key_env: str | None = Field(default=None, description="NAME of the variable holding its key.")
    provider_timeout_seconds: float = Field(default=120.0, gt=0, le=3600, description="Per provider request.")
    mesh_job_timeout_seconds: float = Field(default=900.0, gt=0, le=7200, description="Longest 3D job waited for.")
    poll_interval_seconds: float = Field(default=2.0, gt=0, le=60, description="How often a 3D job is polled.")
    reuse_window_seconds: float = Field(
        default=120.0,
        ge=0,
        le=86400,
        description="A generation asked again with every input identical within this long after it succeeded "
        "returns its files (reused=true) while they are unchanged, instead of paying the provider again; 0: never "
        "(the same call made while one runs still waits for it). allow_duplicate=true always generates.",
    )
    allow: list[str] = Field(
        default_factory=list,
        description="Destinations opened for downloads the providers point to (`host[:port]` or CIDR); everything "
        "private or loopback is refused otherwise (the shared URL guard).",
    )

    _split_allow = field_validator("allow", mode="before")(split_commas)
