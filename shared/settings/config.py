"""Configuration in one place: defaults < config file < `MCP_SECTIONS_*` environment < CLI flags.

The config file is TOML, found at `--config`, `MCP_SECTIONS_CONFIG`, or `<user config dir>/config.toml`, and read
once (`load_settings`): its top-level keys are the global settings; `[sections.<id>]` tables configure one section
each (`Settings.sections`, read by each section's settings class) and `[gateway]` the gateway (`Settings.gateway`,
read by `servers/pool/settings.py`); the same keys can be set from the environment as `MCP_SECTIONS_<ID>_<KEY>`.
Every section's settings class lives in `servers/<id>/settings.py`.

Why not pydantic-settings, which the pydantic ecosystem uses for this: it can read TOML, the environment and the
command line, but its sources are declared per class, while here one parse of the file hands a table to each of a
dozen classes, checked against that file's trust rules first (`check_config_trust`: owner and mode, no `sandbox =
"off"` inside a root) — a per-call table would go through a context variable; it decodes a list from the environment
as JSON where every setting here takes a comma- or path-separated list (each field would need `NoDecode`); and its
unknown-key errors name pydantic's internals where ours (`refuse_unknown`) name the file and the table, a close match
and the valid keys. What remains is `LayeredSettings.load`: twenty lines of layering, which these rules would not
shorten.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal, Self, TypeVar, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.fields import FieldInfo

from mcp_sections.shared.confinement.own_state import OwnState, own_state, trust_problem
from mcp_sections.shared.ground.errors import ConfigError
from mcp_sections.shared.ground.locations import (
    default_cache_dir,
    default_data_dir,
    find_config_file,
    is_inside,
)


class LayeredSettings(BaseModel):
    """Settings read from explicit values (CLI), then `<env_prefix><FIELD>` variables, then a config-file table.

    Environment names match in any case and empty values are ignored; a table-valued setting (a dict or a
    model) is read from its variable as JSON, a list by the field's own splitting validator.
    """

    model_config = ConfigDict(extra="ignore", validate_default=True)

    env_prefix: ClassVar[str] = ""
    # Keys of the config-file table that belong to another reader.
    other_file_keys: ClassVar[frozenset[str]] = frozenset()
    # Fields read from the config file only, never from the environment (raw tables, the file's own path).
    file_only: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def load(
        cls, file_table: dict[str, Any] | None = None, *, where: str = "", source: Path | None = None, **overrides: Any
    ) -> Self:
        """Build the settings from a config-file table, the environment and explicit overrides (None is ignored).

        A key of the table that is no setting (a typo such as `max_depht`) is refused with a close match and the valid
        keys, rather than silently ignored; `where` names the table in that message (e.g. `[sections.todo]`), `source`
        the config file it comes from.
        """
        valid = (set(cls.model_fields) | cls.other_file_keys) - {"config_file"}  # the file's own path: load_settings'
        given = set(file_table or {}) - ({"config_file"} & set(cls.model_fields))
        refuse_unknown(given, valid, what="setting", where=where or f"the {cls.__name__} table", source=source)
        values = {key: value for key, value in (file_table or {}).items() if key in cls.model_fields}
        values.update(cls.from_environment())
        values.update({key: value for key, value in overrides.items() if value is not None})
        return cls.model_validate(values)

    @classmethod
    def environment_variables(cls) -> dict[str, tuple[str, str]]:
        """Field -> (variable, text) for each of this class's `<env_prefix><FIELD>` variables that is set."""
        names = {f"{cls.env_prefix}{name}".upper(): name for name in cls.model_fields if name not in cls.file_only}
        found: dict[str, tuple[str, str]] = {}
        for variable, text in os.environ.items():
            name = names.get(variable.upper())
            if name is not None and text != "":
                found[name] = (variable, text)
        return found

    @classmethod
    def from_environment(cls) -> dict[str, Any]:
        """The values this class's `<env_prefix><FIELD>` variables set."""
        return {
            name: _decode(cls.model_fields[name], variable, text)
            for name, (variable, text) in cls.environment_variables().items()
        }


def refuse_unknown(
    found: Iterable[str],
    known: Iterable[str],
    *,
    what: str,
    where: str,
    source: Path | None,
    show: Callable[[str], str] = repr,
    known_as: str = "valid keys",
) -> None:
    """ConfigError naming the names of `found` that are not in `known` (unknown keys of a table, unknown section ids),
    where they are (`where`, in the config file `source`), the close match of each (difflib) and the known ones: the
    one message of every typo in the config file."""
    known = sorted(set(known))
    unknown = sorted(set(found) - set(known))
    if not unknown:
        return
    file = f"the config file {source}" if source is not None else "the config file"
    place = f"in {where} of {file}" if where else f"in {file}"
    matches = {name: difflib.get_close_matches(name, known, n=1) for name in unknown}
    close = [(name, match[0]) for name, match in matches.items() if match]
    if len(unknown) == 1 and close:
        hint = f" (did you mean {show(close[0][1])}?)"
    elif close:
        hint = f" (did you mean {', '.join(f'{show(match)} for {show(name)}' for name, match in close)}?)"
    else:
        hint = ""
    named = f"{what}{'s' if len(unknown) > 1 else ''} {', '.join(map(show, unknown))}"
    raise ConfigError(f"unknown {named} {place}{hint}; {known_as}: {', '.join(known) or 'none'}")


def invalid_settings(
    exc: ValidationError,
    cls: type[LayeredSettings],
    where: str,
    source: Path | None,
    flags: Collection[str] = (),
) -> ConfigError:
    """A settings class's validation error in one line, each bad value named where it was set (the layer that won): a
    flag among `flags`, its environment variable, else its key in the table `where` of the config file `source`."""
    file = f"the config file {source}" if source is not None else "the config file"
    variables = cls.environment_variables()
    said = []
    for error in exc.errors():
        loc = [str(part) for part in error["loc"]]
        value = error.get("input")
        shown = f" = {value!r}"[:80] if loc and not isinstance(value, dict) else ""
        if not loc:
            named = f"{where} of {file}"
        elif loc[0] in flags:
            named = f"--{loc[0].replace('_', '-')}{shown}"
        elif loc[0] in variables:
            named = f"{variables[loc[0]][0]}{shown} (environment)"
        else:
            named = f"{'.'.join(loc)}{shown} in {where} of {file}"
        said.append(f"{named}: {error['msg']}".replace("\n", " "))
    return ConfigError(f"invalid setting{'s' if len(said) > 1 else ''}: {'; '.join(said)}")


def _decode(field: FieldInfo, variable: str, text: str) -> Any:
    """A table-valued setting comes as JSON; anything else is left to the field's validation."""
    annotation = field.annotation
    is_table = get_origin(annotation) is dict or (isinstance(annotation, type) and issubclass(annotation, BaseModel))
    if not is_table:
        return text
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{variable} must be a JSON object: {exc}") from None


def _split_paths(value: Any) -> Any:
    """Accept a list, or a string separated by the OS path separator (as in `PATH`)."""
    if isinstance(value, str):
        return [part for part in value.split(os.pathsep) if part.strip()]
    return value


def split_commas(value: Any) -> Any:
    """Accept a list, or a comma-separated string (as environment variables give it)."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class Settings(LayeredSettings):
    """Global settings shared by every section and the gateway."""

    env_prefix: ClassVar[str] = "MCP_SECTIONS_"
    file_only: ClassVar[frozenset[str]] = frozenset({"config_file", "sections", "gateway"})

    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="Where sections keep their databases (SQLite files).",
    )
    cache_dir: Path = Field(
        default_factory=default_cache_dir,
        description="Where derived, re-creatable files live (e.g. ONNX exports of the embedding model).",
    )
    roots: list[Path] = Field(
        default_factory=list, description="Directories file-touching tools may use; the first one is the default."
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING"
    warm_up: bool = Field(
        default=True, description="Load heavy models/workers in the background once tools/list is answered."
    )
    approval: Literal["off", "destructive"] = Field(
        default="off",
        description="destructive: ask the user (MCP elicitation) before a destructive tool runs or a sub-agent "
        "starts; refused on clients without elicitation. off: never ask.",
    )
    task_ttl_seconds: float = Field(
        default=3600,
        ge=1,
        le=86400,
        description="How long an MCP task (a long call answered with a task handle) and its result are kept.",
    )
    max_tasks_per_client: int = Field(
        default=16, ge=1, le=1000, description="MCP tasks one client may have working at once."
    )
    allowed_hosts: list[str] = Field(
        default_factory=list, description="Extra Host header values accepted by the HTTP transport."
    )
    allowed_origins: list[str] = Field(
        default_factory=list, description="Extra Origin header values accepted by the HTTP transport."
    )
    config_file: Path | None = Field(default=None, description="The config file these settings were read from.")
    sections: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="`[sections.<id>]` tables of the config file, raw."
    )
    gateway: dict[str, Any] = Field(
        default_factory=dict, description="The `[gateway]` table of the config file, raw (servers/pool/settings.py)."
    )

    _split_roots = field_validator("roots", mode="before")(_split_paths)
    _split_hosts = field_validator("allowed_hosts", "allowed_origins", mode="before")(split_commas)

    @field_validator("data_dir", "cache_dir", mode="after")
    @classmethod
    def _absolute_data_dir(cls, value: Path) -> Path:
        return value.expanduser().resolve()

    def own_state(self) -> OwnState:
        """The suite's own state: data (databases, audit log), cache, and the config that confines the tools.
        Path guards and sandboxes keep it out of reach even when a root contains it (`shared.confinement.own_state`)."""
        config = self.config_file if self.config_file is not None else find_config_file(None)
        return own_state(self.data_dir, self.cache_dir, config)

    def own_state_paths(self) -> tuple[Path, ...]:
        """The own state's real paths and the names the suite reaches them by (links on the way included)."""
        state = self.own_state()
        return tuple(dict.fromkeys((*state.paths, *state.names)))

    @field_validator("roots", mode="after")
    @classmethod
    def _absolute_roots(cls, value: list[Path]) -> list[Path]:
        return [path.expanduser().resolve() for path in value]

    def section_settings(self, model: type[SectionSettingsT], section_id: str) -> SectionSettingsT:
        """The typed settings of one section: its config-file table, then `MCP_SECTIONS_<ID>_*`. A value that is
        refused is a ConfigError naming where it was set."""
        table, where = self.sections.get(section_id, {}), f"[sections.{section_id}]"
        try:
            return model.load(table, where=where, source=self.config_file)
        except ValidationError as exc:
            raise invalid_settings(exc, model, where, self.config_file) from None


class SectionSettings(LayeredSettings):
    """Base for a section's own settings; subclasses set `env_prefix: ClassVar[str] = "MCP_SECTIONS_<ID>_"`."""


SectionSettingsT = TypeVar("SectionSettingsT", bound=SectionSettings)


def load_settings(config_file: Path | None = None, **cli: Any) -> Settings:
    """Read the config file (if any) and build the global settings, CLI values taking precedence."""
    path = find_config_file(config_file)
    table: dict[str, Any] = {}
    if path is not None:
        import tomllib

        try:
            table = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"config file not found: {path}") from None
        except OSError as exc:
            raise ConfigError(f"cannot read the config file {path}: {exc.strerror or exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
        table["config_file"] = path
    try:
        settings = Settings.load(table, where="the top level", source=path, **cli)
    except ValidationError as exc:
        flags = {key for key, value in cli.items() if value is not None}
        raise invalid_settings(exc, Settings, "the top level", path, flags) from None
    if path is not None:
        check_config_trust(path, table, settings.roots)
    return settings


def check_config_trust(path: Path, table: dict[str, Any], roots: list[Path]) -> None:
    """Refuse a config file that a confined program could have written, or that would unprotect itself.

    The config is trusted as a whole (it may add sections that run programs, widen roots, name model endpoints), so
    it must be owned by this user (or root) and writable by nobody else. Inside a root it is protected by the suite
    (hidden from programs, the way to it pinned: `shared.confinement.own_state`) — as long as confinement is on: a
    config file inside a root cannot switch a sandbox off, which would unprotect the file itself.
    """
    problem = trust_problem(path) or trust_problem(path.parent)
    if problem is not None:
        raise ConfigError(f"the config file cannot be trusted: {problem}.")
    refuse_sandbox_off_inside(path, table.get("sections"), roots)


def refuse_sandbox_off_inside(path: Path | None, sections: Any, roots: Sequence[Path]) -> None:
    """ConfigError when the config file lies inside one of `roots` and switches a sandbox off there: it would unprotect
    itself. Checked at start for the CLI roots, and again for the roots a client offers."""
    if path is None or not isinstance(sections, dict):
        return
    real = os.path.realpath(path)
    inside = [root for root in roots if is_inside(real, os.path.realpath(root))]
    if not inside:
        return
    off = sorted(
        section for section, values in sections.items() if isinstance(values, dict) and values.get("sandbox") == "off"
    )
    if off:
        raise ConfigError(
            f"the config file {path} lies inside the root {inside[0]}, where it must stay protected by the sandbox, "
            f"yet it sets sandbox = 'off' for {', '.join(off)}. Move the config file outside the roots, or switch the "
            f"sandbox off from the client's launch environment (e.g. MCP_SECTIONS_{off[0].upper()}_SANDBOX=off)."
        )
