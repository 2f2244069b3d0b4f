"""What orchestration needs beyond its code, for `mcp-sections doctor`: a model for its sub-agents."""

from __future__ import annotations

from mcp_sections.servers.pool.settings import load_gateway_settings
from mcp_sections.shared.agents.sampling import http_configured, sampling_mode
from mcp_sections.shared.agents.scope import ConfigFile
from mcp_sections.shared.framework.sections import SectionRuntime

#: How to give sub-agents a model (the full text is the DEPENDENCY_ERROR of spawn_agent).
CONFIGURE_MODEL = (
    "set [gateway.model] provider and model (and base_url, api_key_env) in that config file, or "
    'MCP_SECTIONS_GATEWAY_MODEL_PROVIDER and _MODEL; or provider = "sampling" for a client that samples'
)


def model_configured(runtime: SectionRuntime) -> str | None:
    """An HTTP model in `[gateway.model]`, or sampling on the client's model; None when one is configured."""
    model = load_gateway_settings(runtime.settings, expose=[]).model
    if http_configured(model) or sampling_mode(model) != "off":
        return None
    config_file = ConfigFile.of(runtime.settings.config_file)
    return f"no model is configured for sub-agents ([gateway.model] provider and model are unset in {config_file})"
