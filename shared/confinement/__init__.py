"""Confinement: the trusted base, the path and URL guards, secrets, the OS sandbox, egress, toolchains, the own
state."""
