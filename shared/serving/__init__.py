"""Serving sections over MCP: the call pipeline, approval, audit, tasks, the SDK adapter, transports."""
