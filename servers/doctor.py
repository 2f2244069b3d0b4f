"""`mcp-sections doctor`: can each section run on this machine, and if not, what to install.

Each section declares what it needs (`Section.requirements`, probes in `shared.framework.requirements`); doctor runs
those probes with the section's own settings (config file, environment), so a config file's `backend = "neo4j"` is seen.
The verdict is what the section's first calls do (tests/doctor/test_first_calls.py compares them, on a light and a
full install): *ready*; *degraded* when an optional need is missing, saying what still works ("text search only");
*unavailable* when a required one is, its calls failing with DEPENDENCY_ERROR. Each fix is said once, after every miss
it fixes (one install command for the modules of an extra). A configuration that cannot be read is refused as every
command refuses it (`mcp-sections: <what is wrong, where>`, status 2).

`check_config` is the start-time check of every command that reads the config file (`mcp-sections gateway`, `serve`,
`doctor`, ...): each `[sections.<id>]` table against its section's settings model, found in `servers/<id>/settings.py`
without importing the section (nor anything heavy), so that a typo is refused at once with the file, the table, the
key and a close match, not at the section's first call.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass, field
from typing import Literal

from mcp_sections.servers.registry import BUILTIN_SECTIONS, load_section
from mcp_sections.shared.framework.requirements import MissingModules, Requirement
from mcp_sections.shared.ground.errors import ConfigError
from mcp_sections.shared.settings.config import SectionSettings, Settings, load_settings, refuse_unknown

Status = Literal["ready", "degraded", "unavailable"]


@dataclass
class SectionReport:
    section: str
    status: Status = "ready"
    problems: list[str] = field(default_factory=list)  # required misses, each line ending with its fix
    hints: list[str] = field(default_factory=list)  # optional misses, likewise
    works: list[str] = field(default_factory=list)  # degraded: what the section still does

    def as_dict(self) -> dict[str, object]:
        return {
            "section": self.section,
            "status": self.status,
            "works": self.works,
            "problems": self.problems,
            "hints": self.hints,
        }


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
    misses = [(requirement, problem) for requirement in section.requirements if (problem := requirement.probe(runtime))]
    for fix, group in _by_fix(misses).items():
        line = f"{_said_together([problem for _, problem in group])} — {fix}"
        if all(requirement.optional for requirement, _ in group):
            report.hints.append(line)
        else:
            report.problems.append(line)
    if report.problems:
        report.status = "unavailable"
    elif report.hints:
        report.status = "degraded"
        report.works = list(dict.fromkeys(requirement.without for requirement, _ in misses if requirement.without))
    return report


def check_all(section_ids: list[str], settings: Settings | None = None) -> list[SectionReport]:
    """The sections' reports with `settings` (default: the usual config file, one that cannot be read making every
    section unavailable)."""
    if settings is None:
        try:
            settings = load_settings()
        except ConfigError as exc:
            return [
                SectionReport(section_id, "unavailable", [f"the configuration cannot be read: {exc}"])
                for section_id in section_ids
            ]
    return [check_section(section_id, settings) for section_id in section_ids]


def check_config(settings: Settings) -> list[str]:
    """Refuse (ConfigError) a `[sections.<id>]` table of the config file whose id is no section (with the known ones
    and a close match), or whose keys or values its section's settings refuse; the notes on the tables not checked: a
    third-party section's (`[gateway.sections.<id>]`: its settings are its own server's)."""
    external = settings.gateway.get("sections")
    third_party = sorted(set(external) - set(BUILTIN_SECTIONS)) if isinstance(external, dict) else []
    source = settings.config_file
    refuse_unknown(
        settings.sections,
        [*BUILTIN_SECTIONS, *third_party],
        what="section",
        where="",
        source=source,
        show=lambda section_id: f"[sections.{section_id}]",
        known_as="known sections",
    )
    notes = []
    for section_id in settings.sections:
        if section_id not in BUILTIN_SECTIONS:
            notes.append(
                f"[sections.{section_id}] of the config file{f' {source}' if source else ''} is not checked: "
                f"{section_id} is a third-party section ([gateway.sections.{section_id}]), whose settings the suite "
                "does not know"
            )
            continue
        model = settings_model(section_id)
        if model is None:
            refuse_unknown(
                settings.sections[section_id], (), what="setting", where=f"[sections.{section_id}]", source=source
            )
        else:
            settings.section_settings(model, section_id)
    return notes


def settings_model(section_id: str) -> type[SectionSettings] | None:
    """A built-in section's settings model, found without importing the section: the `SectionSettings` subclass of
    its `settings` module with its env prefix (CONTRIBUTING's layout); else its declaration's (`section.py` imports
    nothing heavy either)."""
    package = BUILTIN_SECTIONS[section_id].rpartition(".")[0]
    prefix = f"MCP_SECTIONS_{section_id.upper()}_"
    if package and importlib.util.find_spec(f"{package}.settings") is not None:
        module = importlib.import_module(f"{package}.settings")
        found = [
            value
            for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, SectionSettings) and value.env_prefix == prefix
        ]
        if len(found) == 1:
            return found[0]
    return load_section(section_id).settings_model


def render(reports: list[SectionReport]) -> str:
    lines = [f"{'SECTION':<14} {'STATUS':<12} WHAT TO DO"]
    for report in reports:
        todo = [f"works: {what}" for what in report.works] + report.problems + report.hints
        lines.append(f"{report.section:<14} {report.status:<12} {todo[0] if todo else '-'}")
        lines.extend(f"{'':<27} {item}" for item in todo[1:])
    return "\n".join(lines)


def _by_fix(misses: list[tuple[Requirement, str]]) -> dict[str, list[tuple[Requirement, str]]]:
    """The misses grouped by the fix that mends them (its words for this installation), in declaration order."""
    groups: dict[str, list[tuple[Requirement, str]]] = {}
    for requirement, problem in misses:
        groups.setdefault(str(requirement.fix), []).append((requirement, problem))
    return groups


def _said_together(problems: list[str]) -> str:
    """The problems of one fix in one sentence: its missing Python modules named at once, then the others."""
    modules = [name for problem in problems if isinstance(problem, MissingModules) for name in problem.names]
    others = [problem for problem in problems if not isinstance(problem, MissingModules)]
    said = [MissingModules(dict.fromkeys(modules))] if modules else []
    return "; ".join(dict.fromkeys([*said, *others]))
