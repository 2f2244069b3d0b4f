"""The section servers this process runs, noted with the trusted settings each was built with.

A few things belong to the process rather than to one call: the suite's own endpoints that no program may publish a
port on (`shared.settings.endpoints`: the URLs of every config file read here), and where shell_ops records the ports it
publishes (`shared.confinement.published_ports`: its data directory). The section pipeline notes each server as it is
built (`shared.serving.pipeline`: served alone, in the gateway's process, or hosted), the way
`shared.framework.resources.serve_as` names the server that mints URIs. A process normally runs one section server; when
several were built here (tests, the gateway's in-process sections), each section id keeps the settings it was built with
last.
"""

from __future__ import annotations

import threading

from mcp_sections.shared.settings.config import Settings

_LOCK = threading.Lock()
_BY_SECTION: dict[str, Settings] = {}


def note(section_id: str, settings: Settings) -> None:
    """Note that a server of `section_id` was built here with `settings`."""
    with _LOCK:
        _BY_SECTION[section_id] = settings


def settings_of(section_id: str) -> Settings | None:
    """The settings the last server of `section_id` built here was given (None: none was)."""
    with _LOCK:
        return _BY_SECTION.get(section_id)


def all_settings() -> tuple[Settings, ...]:
    """The settings of every section server built here (one per section id)."""
    with _LOCK:
        return tuple(_BY_SECTION.values())
