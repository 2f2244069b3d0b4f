"""The gateway's settings: `[gateway]` (and `[gateway.model]`, `[gateway.sections.<id>]`) of the config file.

Environment: `MCP_SECTIONS_GATEWAY_<KEY>` and `MCP_SECTIONS_GATEWAY_MODEL_<KEY>`; CLI flags win over both.

```toml
[gateway]
expose = ["calculator"]        # tools listed directly in the gateway's tools/list (or --expose)
in_process = ["calculator", "todo"]  # light built-ins run inside the gateway (or --in-process); see below
max_depth = 3                  # deepest sub-agent; plan_actions is hidden there (0: no sub-agents)
max_subagents = 3              # sub-agents alive at once; MAX_LIMIT_EXCEEDED beyond
disabled_tools = ["shell_ops:*", "delete_*"]  # section tools hidden everywhere: shell-style patterns on a
                               # tool's name or `<section>:<tool>` (see filters.py)
enabled_tools = []             # when set: only the tools matching one of these
profile = "readonly"           # or --profile: `readonly` (only tools annotated read-only) or a profile below

[gateway.profiles.review]      # a named profile: its own patterns, and/or read_only = true
enabled_tools = ["file_ops:*", "git_*"]
read_only = true

[gateway.model]                # the model sub-agents (plan_actions) run on
provider = "openai"            # any OpenAI-compatible Chat Completions endpoint, or "anthropic"
model = "qwen2.5:14b"
base_url = "http://localhost:11434/v1"
api_key_env = "OPENAI_API_KEY" # the NAME of the variable holding the key
sampling = "off"               # "prefer" | "fallback": the MCP client's model through sampling (with tools),
                               # on 2025-11-25 connections; provider = "sampling" for that alone

[gateway.sections.shell_ops]   # a built-in section launched differently (here in a container)
command = "docker"
args = ["run", "-i", "--rm", "mcp-sections", "serve", "shell_ops"]

[gateway.auth]                 # the HTTP gateway of a team: an OAuth 2.1 resource server (shared/serving/oauth.py)
issuer = "https://auth.example.com/realms/team"   # the authorization server (its metadata's `issuer`)
resource = "https://mcp.example.com/mcp"          # this gateway as clients reach it: the audience of its tokens
# jwks_url / metadata_url: default from the issuer's metadata; algorithms = ["RS256", "ES256"]; clock_skew_seconds = 60

[gateway.auth.scopes]          # what each scope of a token allows (filters.py): a profile, or "all"
"mcp:read" = "readonly"
"mcp:tools" = "all"

[gateway.sections.github]      # a third-party MCP server as a section
url = "https://example.com/mcp"
headers = { Authorization = "Bearer ..." }
name = "GitHub"
description = "Issues and pull requests"
```

`in_process` (opt-in; env `MCP_SECTIONS_GATEWAY_IN_PROCESS=calculator,todo`; CLI `--in-process calculator,todo`):
the gateway builds these built-in sections from their declarations (`SectionState` + `run_tool`, exactly what
`mcp-sections serve` runs) and calls them directly instead of through a subprocess. Same results, same error
codes, same argument validation (the gateway's inputSchema check, then the section's own), same data
directory, roots and `[sections.<id>]` settings. The default stays a subprocess per section, because:

- speed: a call skips one JSON-RPC round trip over stdio and a second server stack. `calculator_binary` through
  `call_section_tool` costs about 2x a direct call to `serve calculator` as a subprocess hop and roughly the same
  as a direct call in process (see `python -m benchmarks.bench_gateway`); the section's first use costs an
  import instead of a ~1 s interpreter start;
- isolation is lost: the section shares the gateway's memory, GIL and event loop. A crash (segfault, memory
  blow-up) takes the gateway down instead of one section, a CPU-bound tool slows every other call, and there
  is no process to kill or restart: past `call_timeout_seconds` an async tool is cancelled (TIMEOUT), but a
  sync tool's worker thread cannot be interrupted, so its call ends (TIMEOUT) only when the thread does; the
  section's imports and state stay in the gateway for its lifetime;
- so only light built-in sections may run in process: no third-party sections, none launched through
  `[gateway.sections.<id>]` (e.g. in a container), none that run sub-agents (orchestration) or need the
  server's event loop (a `lifespan`), and none its declaration calls heavy (`Section.heavy`: `memory` and `rag_ops`
  hold the embedding model, about 160 MB). Those are refused at start with a configuration error.
  `calculator` runs its expression work in a killable worker process of its own either way.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mcp_sections.shared.framework.sections import SECTION_ID
from mcp_sections.shared.settings.config import ConfigError, LayeredSettings, Settings, split_commas

from .filters import ALL_TOOLS, ScopeGrant, ToolFilter

if TYPE_CHECKING:
    from mcp_sections.shared.serving.oauth import ResourceServer


class ExternalSection(BaseModel):
    """`[gateway.sections.<id>]`: a third-party MCP server (stdio command or Streamable HTTP URL) as a section."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    description: str = ""
    command: str | None = Field(default=None, description="Executable of a stdio MCP server.")
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment of the stdio server.")
    cwd: str | None = None
    url: str | None = Field(default=None, description="Streamable HTTP endpoint of the server.")
    headers: dict[str, str] = Field(default_factory=dict, description="Extra HTTP headers (e.g. authorization).")
    auth_token_file: Path | None = Field(
        default=None, description="HTTP: send `Authorization: Bearer <the file's content>` (e.g. a compose secret)."
    )
    protocol: Literal["auto", "legacy"] = "auto"

    @model_validator(mode="after")
    def _one_target(self) -> ExternalSection:
        if (self.command is None) == (self.url is None):
            raise ValueError("set exactly one of `command` (stdio) or `url` (Streamable HTTP)")
        if self.auth_token_file is not None and self.url is None:
            raise ValueError("`auth_token_file` applies to a `url` section only")
        return self

    def http_headers(self) -> dict[str, str]:
        """The headers sent to a Streamable HTTP section: `headers`, plus the bearer token from its file."""
        if self.auth_token_file is None:
            return dict(self.headers)
        from mcp_sections.shared.serving.http_auth import read_token_file

        return {**self.headers, "Authorization": f"Bearer {read_token_file(self.auth_token_file)}"}


class ToolProfile(BaseModel):
    """`[gateway.profiles.<name>]`: a named set of tool filters, chosen with `[gateway] profile` or `--profile`."""

    model_config = ConfigDict(extra="forbid")

    description: str = Field(default="", max_length=500)
    read_only: bool = Field(
        default=False,
        description="Only calls that only read: a tool's per-call annotations decide (readOnlyHint otherwise).",
    )
    enabled_tools: list[str] = Field(default_factory=list, description="Only tools matching one of these patterns.")
    disabled_tools: list[str] = Field(default_factory=list, description="Tools matching one of these are hidden.")


BUILTIN_PROFILES = {"readonly": ToolProfile(description="only tools annotated read-only", read_only=True)}
MAX_PATTERN_LENGTH = 200


def _patterns(value: Any) -> Any:
    value = split_commas(value)
    if isinstance(value, list):
        for pattern in value:
            if not isinstance(pattern, str) or not pattern.strip() or len(pattern) > MAX_PATTERN_LENGTH:
                raise ValueError(
                    f"a tool pattern must be a non-empty string of at most {MAX_PATTERN_LENGTH} characters"
                )
    return value


class ModelSettings(LayeredSettings):
    """`[gateway.model]`: the model sub-agents run on. Only the *name* of the API-key variable is configured."""

    env_prefix: ClassVar[str] = "MCP_SECTIONS_GATEWAY_MODEL_"

    provider: Literal["openai", "anthropic", "sampling"] | None = Field(
        default=None,
        description="`openai` (any OpenAI-compatible Chat Completions endpoint), `anthropic`, or `sampling` (only "
        "the MCP client's model, see shared.agents.sampling).",
    )
    sampling: Literal["off", "prefer", "fallback"] = Field(
        default="off",
        description="Beside an HTTP model: `prefer` the client's model (MCP sampling) where the connection allows, "
        "use it only as the `fallback` when no HTTP model is configured, or `off`.",
    )
    model: str | None = None
    base_url: str | None = Field(default=None, description="Endpoint base URL (default per provider).")
    api_key_env: str | None = Field(
        default=None, description="Name of the environment variable holding the API key (never the key itself)."
    )
    max_output_tokens: int = Field(default=4096, ge=16, le=200_000)
    temperature: float | None = Field(default=None, ge=0, le=2)
    timeout_seconds: float = Field(default=300, gt=0, le=3600, description="Timeout of one model call.")

    @property
    def configured(self) -> bool:
        """A model is configured: an HTTP one, or the client's through sampling."""
        return self.provider == "sampling" or self.sampling != "off" or (self.provider is not None and bool(self.model))


SCOPE_PATTERN = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]{1,200}$")  # RFC 6749 §3.3 scope-token


class AuthSettings(LayeredSettings):
    """`[gateway.auth]`: the team's authorization server. The HTTP gateway then accepts only its access tokens
    (`shared.serving.oauth`), each call is its token's user's (`shared.framework.clients`), and the tools a call may
    run follow the token's scopes (`scopes`, `filters.py`). Environment: `MCP_SECTIONS_GATEWAY_AUTH_<KEY>` (`SCOPES`
    as a JSON object)."""

    env_prefix: ClassVar[str] = "MCP_SECTIONS_GATEWAY_AUTH_"

    issuer: str | None = Field(
        default=None, description="The authorization server's issuer identifier (the `issuer` of its metadata)."
    )
    resource: str | None = Field(
        default=None,
        description="This gateway's canonical URI as clients reach it (`https://mcp.example.com/mcp`): the audience "
        "(RFC 8707 resource) its access tokens must name.",
    )
    jwks_url: str | None = Field(default=None, description="The signing keys (default: the metadata's jwks_uri).")
    metadata_url: str | None = Field(
        default=None, description="The issuer's metadata (default: its RFC 8414 or OpenID Connect well-known URL)."
    )
    algorithms: list[str] = Field(
        default_factory=lambda: ["RS256", "ES256"], description="Accepted signing algorithms (asymmetric only)."
    )
    clock_skew_seconds: int = Field(default=60, ge=0, le=600, description="Leeway on exp, nbf and iat.")
    scopes: dict[str, str] = Field(
        default_factory=dict,
        description="Scope -> tool profile (`readonly`, a [gateway.profiles] name, or `all`); empty: scopes do not "
        "limit the tools.",
    )
    resource_name: str | None = Field(default=None, max_length=200, description="Named in the resource metadata.")

    _split_algorithms = field_validator("algorithms", mode="before")(split_commas)

    @property
    def configured(self) -> bool:
        return self.issuer is not None

    @model_validator(mode="after")
    def _complete(self) -> AuthSettings:
        others = (self.resource, self.jwks_url, self.metadata_url, self.scopes)
        if (self.issuer is None) != (self.resource is None) or (self.issuer is None and any(others)):
            raise ValueError(
                "[gateway.auth] needs both `issuer` (the authorization server) and `resource` (this gateway's URI "
                "as clients reach it)"
            )
        if self.issuer is None:
            return self
        from mcp_sections.shared.serving.oauth import SIGNING_ALGORITHMS

        unknown = sorted(set(self.algorithms) - SIGNING_ALGORITHMS)
        if unknown or not self.algorithms:
            raise ValueError(
                f"[gateway.auth] algorithms {unknown or 'none'}: choose among {', '.join(sorted(SIGNING_ALGORITHMS))}"
            )
        for scope in self.scopes:
            if not SCOPE_PATTERN.match(scope):
                raise ValueError(f"[gateway.auth.scopes]: {scope!r} is not an OAuth scope (no spaces or quotes)")
        return self

    def resource_server(self) -> ResourceServer | None:
        """The `shared.serving.oauth.ResourceServer` of these settings (None when not configured)."""
        from mcp_sections.shared.serving.oauth import ResourceServer

        if self.issuer is None or self.resource is None:
            return None
        return ResourceServer(
            issuer=self.issuer,
            resource=self.resource,
            scopes=tuple(self.scopes),
            jwks_url=self.jwks_url,
            metadata_url=self.metadata_url,
            algorithms=tuple(self.algorithms),
            clock_skew_seconds=self.clock_skew_seconds,
            resource_name=self.resource_name,
        )


class GatewaySettings(LayeredSettings):
    """Everything the gateway reads besides the global settings."""

    env_prefix: ClassVar[str] = "MCP_SECTIONS_GATEWAY_"

    expose: list[str] = Field(
        default_factory=list, description="Sections whose tools appear directly in the gateway's tools/list."
    )
    in_process: list[str] = Field(
        default_factory=list,
        description="Light built-in sections the gateway runs in its own process instead of a subprocess.",
    )
    max_depth: int = Field(default=3, ge=0, le=10, description="Deepest sub-agent level; plan_actions is hidden there.")
    max_subagents: int = Field(default=3, ge=1, le=32, description="Sub-agents alive at once, across all callers.")
    agent_max_turns: int = Field(default=20, ge=1, le=500)
    agent_max_tool_calls: int = Field(default=50, ge=0, le=5000)
    agent_max_tokens: int = Field(default=200_000, ge=100)
    agent_max_seconds: float = Field(default=900, gt=0)
    call_timeout_seconds: float = Field(default=300, gt=0, description="Timeout of one forwarded section call.")
    restart_backoff_seconds: float = Field(
        default=0.5,
        ge=0,
        description="Base of the restart back-off: the first retry is immediate, then this doubles (up to 4x for a "
        "section killed from outside, up to restart_backoff_max_seconds for one that fails by itself).",
    )
    restart_backoff_max_seconds: float = Field(default=30, ge=0)
    idle_watch_seconds: float = Field(
        default=2.0, gt=0, le=3600, description="How often an idle section's process is checked, so a dead one is seen."
    )
    disabled_tools: list[str] = Field(
        default_factory=list, description="Section tools hidden everywhere: name patterns (`write_*`, `shell_ops:*`)."
    )
    enabled_tools: list[str] = Field(
        default_factory=list, description="When set, only the section tools matching one of these name patterns."
    )
    profile: str | None = Field(default=None, description="A tool profile: `readonly`, or a [gateway.profiles] name.")
    profiles: dict[str, ToolProfile] = Field(default_factory=dict)
    sections: dict[str, ExternalSection] = Field(default_factory=dict)
    model: ModelSettings = Field(default_factory=ModelSettings)
    auth: AuthSettings = Field(default_factory=AuthSettings)

    _split_expose = field_validator("expose", "in_process", mode="before")(split_commas)
    _split_patterns = field_validator("disabled_tools", "enabled_tools", mode="before")(_patterns)

    @property
    def known_profiles(self) -> dict[str, ToolProfile]:
        """The built-in profiles and `[gateway.profiles]` (which may redefine a built-in one)."""
        return {**BUILTIN_PROFILES, **self.profiles}

    @model_validator(mode="after")
    def _known_profile(self) -> GatewaySettings:
        known = self.known_profiles
        if self.profile is not None and self.profile not in known:
            raise ValueError(f"unknown tool profile {self.profile!r}; profiles: {', '.join(sorted(known))}")
        for name, profile in self.profiles.items():
            _patterns(profile.enabled_tools)
            _patterns(profile.disabled_tools)
            if not SECTION_ID.match(name):
                raise ValueError(f"[gateway.profiles.{name}]: profile names must match {SECTION_ID.pattern}")
        for scope, granted in self.auth.scopes.items():
            if granted != ALL_TOOLS and granted not in known:
                raise ValueError(
                    f"[gateway.auth.scopes] {scope!r}: unknown tool profile {granted!r}; profiles: "
                    f"{', '.join(sorted({ALL_TOOLS, *known}))}"
                )
        return self

    def tool_filter(self) -> ToolFilter:
        """The tool filters in force (`filters.py`)."""
        chosen = self.known_profiles.get(self.profile) if self.profile else None
        return ToolFilter(
            enabled=tuple(self.enabled_tools),
            disabled=tuple(self.disabled_tools),
            profile=self.profile,
            profile_enabled=tuple(chosen.enabled_tools) if chosen else (),
            profile_disabled=tuple(chosen.disabled_tools) if chosen else (),
            read_only=bool(chosen and chosen.read_only),
            scopes=tuple(self._grant(scope, profile) for scope, profile in self.auth.scopes.items()),
        )

    def _grant(self, scope: str, profile: str) -> ScopeGrant:
        """What `scope` allows: its profile's rules."""
        rules = self.known_profiles.get(profile)
        if rules is None:  # ALL_TOOLS
            return ScopeGrant(scope, profile)
        return ScopeGrant(scope, profile, tuple(rules.enabled_tools), tuple(rules.disabled_tools), rules.read_only)

    @field_validator("sections", mode="after")
    @classmethod
    def _valid_ids(cls, value: dict[str, ExternalSection]) -> dict[str, ExternalSection]:
        for section_id in value:
            if not SECTION_ID.match(section_id):
                raise ValueError(f"[gateway.sections.{section_id}]: section ids must match {SECTION_ID.pattern}")
        return value


def load_gateway_settings(settings: Settings, **overrides: Any) -> GatewaySettings:
    if not isinstance(settings.gateway, dict):
        raise ConfigError(f"config file {settings.config_file}: `gateway` must be a table")
    table = dict(settings.gateway)  # the [gateway] table of the one parse of the config file
    model_table = table.pop("model", {}) or {}
    auth_table = table.pop("auth", {}) or {}
    try:
        source = settings.config_file
        model = ModelSettings.load(model_table, where="[gateway.model]", source=source)
        auth = AuthSettings.load(auth_table, where="[gateway.auth]", source=source)
        return GatewaySettings.load(table, where="[gateway]", source=source, model=model, auth=auth, **overrides)
    except ValueError as exc:
        where = settings.config_file or "the environment"
        raise ConfigError(f"invalid gateway settings (from {where}): {exc}") from None
