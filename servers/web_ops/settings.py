"""`[sections.web_ops]` in the config file, or `MCP_SECTIONS_WEB_OPS_*`."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator

from mcp_sections.shared.brain.opening import BrainBackend
from mcp_sections.shared.embeddings.settings import EmbeddingSettings
from mcp_sections.shared.settings.config import SectionSettings, split_commas

USER_AGENT = "mcp-sections-web_ops/0.1 (+https://github.com/mcp-sections/mcp-sections; an AI agent's fetch tool)"
ALLOW_SETTING = "`[sections.web_ops] allow` (or MCP_SECTIONS_WEB_OPS_ALLOW, comma-separated)"


class WebOpsSettings(SectionSettings, EmbeddingSettings):
    """Where web_ops may go, how it renders pages, which search provider it asks, and the brain it writes."""

    env_prefix: ClassVar[str] = "MCP_SECTIONS_WEB_OPS_"

    allow: list[str] = Field(
        default_factory=list,
        description="Destinations opened despite the address rules: `host[:port]` or CIDR entries. Everything "
        "private, loopback, link-local or metadata is refused otherwise.",
    )
    browser_executable: str | None = Field(
        default=None,
        description="Chromium to drive; default: the system's (/usr/lib/chromium/chromium, chromium, "
        "google-chrome...) when found, else Playwright's own build.",
    )
    browser: bool = Field(default=True, description="Use a browser at all (off: plain HTTP only).")
    user_agent: str = Field(default=USER_AGENT, min_length=1, max_length=300)
    timeout_seconds: float = Field(default=20.0, gt=0, le=300, description="Per page, all redirects included.")
    max_page_bytes: int = Field(
        default=5_000_000, ge=10_000, le=100_000_000, description="Bodies are cut at this size."
    )
    respect_robots: bool = Field(default=True, description="Crawls skip pages robots.txt disallows.")
    verify_tls: bool = Field(default=True, description="Check TLS certificates (leave on).")
    cache_pages: int = Field(default=6, ge=0, le=100, description="Pages kept by the short-term LRU cache.")
    search_provider: Literal["auto", "searxng", "brave", "ddgs"] = Field(
        default="auto",
        description="auto: SearXNG when searxng_url is set, else Brave when its key variable is set, else ddgs.",
    )
    searxng_url: str | None = Field(default=None, description="A SearXNG instance with its JSON API enabled.")
    brave_api_key_env: str = Field(
        default="BRAVE_API_KEY", description="Name of the environment variable holding the Brave Search API key."
    )
    backend: BrainBackend = Field(
        default="sqlite", description="The brain ingest_web_page writes (the same as rag_ops': set both alike)."
    )
    embeddings: bool = Field(default=True, description="Embed ingested pages for search by meaning.")

    _split_allow = field_validator("allow", mode="before")(split_commas)
