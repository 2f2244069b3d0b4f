"""`mcp-sections doctor`: can each section run on this machine, and if not, what to install.

Each section declares what it needs (`Section.requirements`, probes in `shared.framework.requirements`); doctor runs
those probes with the section's own settings (config file, environment), so a config file's `backend = "neo4j"` is seen.
A *required* miss makes the section unusable; an *optional* one degrades it (a slower engine, a feature off) and is
shown as a hint. A configuration that cannot be read makes every section unavailable, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from mcp_sections.servers.registry import load_section
from mcp_sections.shared.ground.errors import ConfigError
from mcp_sections.shared.settings.config import Settings, load_settings

Status = Literal["ready", "degraded", "unavailable"]


@dataclass
class SectionReport:
    section: str
    status: Status = "ready"
    problems: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"section": self.section, "status": self.status, "problems": self.problems, "hints": self.hints}


def check_section(section_id: str, settings: Settings | None = None) -> SectionReport:
    """Run the section's declared probes with its own settings."""
    report = SectionReport(section_id)
    section = load_section(section_id)
    try:
        runtime = section.runtime(settings if settings is not None else load_settings())
    except (ConfigError, ValueError) as exc:
        report.problems.append(f"its settings cannot be read: {exc}")
        report.status = "unavailable"
        return report
    for requirement in section.requirements:
        problem = requirement.probe(runtime)
        if problem is None:
            continue
        line = f"{problem} — {requirement.fix}"
        if requirement.optional:
            report.hints.append(line)
            if report.status == "ready":
                report.status = "degraded"
        else:
            report.problems.append(line)
            report.status = "unavailable"
    return report


def check_all(section_ids: list[str]) -> list[SectionReport]:
    try:
        settings: Settings | None = load_settings()
    except ConfigError as exc:
        return [
            SectionReport(section_id, "unavailable", [f"the configuration cannot be read: {exc}"])
            for section_id in section_ids
        ]
    return [check_section(section_id, settings) for section_id in section_ids]


def render(reports: list[SectionReport]) -> str:
    lines = [f"{'SECTION':<14} {'STATUS':<12} WHAT TO DO"]
    for report in reports:
        todo = report.problems + report.hints
        lines.append(f"{report.section:<14} {report.status:<12} {todo[0] if todo else '-'}")
        lines.extend(f"{'':<27} {item}" for item in todo[1:])
    return "\n".join(lines)
