"""Traces, health, the status page and tool filters (issue #25)."""
