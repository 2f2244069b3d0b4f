"""Settings of the shell_ops section (`[sections.shell_ops]` or `MCP_SECTIONS_SHELL_OPS_*`); fixed at start-up."""

from __future__ import annotations

import os
from typing import ClassVar, Literal

from pydantic import Field, field_validator

from mcp_sections.servers.shell_ops.identity import one_line
from mcp_sections.servers.shell_ops.policies.allow_list import DEFAULT_ALLOWED_PROGRAMS, check_allow_list
from mcp_sections.servers.shell_ops.policies.environment import DEFAULT_PROCESS_ENVIRONMENT, check_environment_names
from mcp_sections.shared.confinement.installers import DEFAULT_REGISTRIES
from mcp_sections.shared.ground.programs import DEFAULT_SEARCH_PATH
from mcp_sections.shared.settings.config import SectionSettings


class ShellOpsSettings(SectionSettings):
    """The allow-list, the fixed search path and the limits. No tool can change them at run time."""

    env_prefix: ClassVar[str] = "MCP_SECTIONS_SHELL_OPS_"

    allowed_programs: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ALLOWED_PROGRAMS),
        description="Program names run_command may start (comma-separated in the environment). Shells and "
        "wrappers (sh, bash, env, xargs, sudo, timeout, ...) are refused even if listed.",
    )
    search_path: str = Field(
        default=DEFAULT_SEARCH_PATH,
        description="The fixed PATH programs are resolved on (and the children's PATH); never the caller's. Entries "
        "inside the roots are ignored: a project's own environment (.venv, node_modules/.bin) is put first per "
        "command, from its working directory. An interpreter this path leads to outside the system directories "
        "(nvm's node, a pyenv or Homebrew python3) is shown to programs once verified to be an installation.",
    )
    project_programs: bool = Field(
        default=True,
        description="Run the project's own programs given by a path inside the roots (./gradlew, .venv/bin/pytest, "
        "scripts/check.sh), confined like every program. The default allow-list already runs project code (python3, "
        "node, make, npm); set false together with a read-only allow-list.",
    )
    default_timeout_seconds: float = Field(default=60.0, gt=0, le=3600)
    max_timeout_seconds: float = Field(default=600.0, gt=0, le=86400)
    max_output_bytes: int = Field(
        default=64 * 1024, ge=1024, le=64 * 1024 * 1024, description="Per stream; head and tail are kept."
    )
    max_total_output_bytes: int = Field(
        default=16 * 1024 * 1024,
        ge=1024 * 1024,
        le=16 * 1024 * 1024 * 1024,
        description="A program that writes more than this in all is stopped (an output flood, e.g. `cat` of a huge "
        "sparse file); the head and tail it wrote are kept as usual.",
    )
    git_author_name: str | None = Field(
        default=None,
        max_length=256,
        description="The user.name commits are made as (author and committer), instead of the one of your own "
        "`git config --global` on the server's machine. Programs get it as their global git config: a repository's "
        "own user.name and `git -c user.name=` still win.",
    )
    git_author_email: str | None = Field(
        default=None, max_length=256, description="The user.email commits are made as (see git_author_name)."
    )
    sandbox: Literal["auto", "bubblewrap", "seatbelt", "off"] = Field(
        default="auto",
        description="Confinement of every program by the OS (shared/confinement/sandbox.py): auto is bubblewrap on "
        "Linux and Seatbelt (sandbox-exec) on macOS and refuses to run commands without a working one; off runs them "
        "unconfined and says so in every result.",
    )

    strict_arguments: bool = Field(
        default=False,
        description="Apply every argument rule even inside the sandbox, as with sandbox = 'off': a read-only "
        "allow-list (ls, cat, grep, find, sort) stays read-only (no find -delete/-exec, sort -o), python -c and git -c "
        "are refused, no command installs, `env` takes only process_environment. Off by default: the sandbox confines "
        "what those options do to the roots.",
    )
    max_processes: int = Field(
        default=8, ge=1, le=64, description="Long-running processes (start_process) running at once."
    )
    process_output_bytes: int = Field(
        default=1024 * 1024,
        ge=64 * 1024,
        le=64 * 1024 * 1024,
        description="Output kept per long-running process: the last this many bytes (older output is dropped and "
        "counted).",
    )
    max_process_lifetime_seconds: float = Field(
        default=3600.0, gt=0, le=7 * 86400, description="A long-running process is killed after this long."
    )
    process_environment: list[str] = Field(
        default_factory=lambda: list(DEFAULT_PROCESS_ENVIRONMENT),
        description="With the sandbox off: the environment variables run_command and start_process may add "
        "(comma-separated in the environment); names that change how programs are found, loaded or configured (PATH, "
        "HOME, LD_*, PYTHONPATH, NODE_OPTIONS, GIT_*, npm_config_*, ...) are refused even if listed. Inside the "
        "sandbox any name is accepted but the few that reach outside it (LD_*, the egress proxy's, PATH, HOME, "
        "TMPDIR).",
    )
    install_registries: list[str] = Field(
        default_factory=lambda: list(DEFAULT_REGISTRIES),
        description="The only places an installer run_command starts (pip/uv/poetry install, npm ci, ...) may reach, "
        "through an egress proxy (no other address, loopback included): registry URLs (`https://pypi.org`) or hosts "
        "(`*.example.org`); the server's own PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, UV_INDEX_URL and npm_config_registry "
        "are added. Every other program has no network.",
        max_length=100,
    )
    publish_ports: bool = Field(
        default=True,
        description="Let start_process publish a sandboxed server's loopback ports on the host's 127.0.0.1 "
        "(a relay; the program itself still has no network).",
    )

    @field_validator("process_environment", "install_registries", mode="before")
    @classmethod
    def _split_names(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("process_environment", mode="after")
    @classmethod
    def _check_names(cls, value: list[str]) -> list[str]:
        return check_environment_names(value)

    @field_validator("git_author_name", "git_author_email", mode="after")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        text = one_line(value)
        if text is None and value is not None and value.strip():
            raise ValueError("must be one line of text (no control characters)")
        return text

    @field_validator("allowed_programs", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("allowed_programs", mode="after")
    @classmethod
    def _check_programs(cls, value: list[str]) -> list[str]:
        return check_allow_list(value)

    @field_validator("search_path", mode="after")
    @classmethod
    def _absolute_search_path(cls, value: str) -> str:
        parts = [part for part in value.split(os.pathsep) if part]
        if not parts or any(not os.path.isabs(part) for part in parts):
            raise ValueError("search_path must be a non-empty list of absolute directories")
        return os.pathsep.join(parts)
