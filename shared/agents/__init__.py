"""Sub-agents: a model provider and a bounded tool-calling loop over the gateway's tools."""
