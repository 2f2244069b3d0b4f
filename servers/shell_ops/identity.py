"""Who commits are made as, and the hints for git's "who are you" and `git config --global` failures.

Programs run with a private HOME, so the user's ~/.gitconfig is never read there, and never shown to them: it may
name credential helpers, aliases and includes that run programs. Instead the server reads two values of it once, on
the host, with the system's git (`host_identity`: `git config --global --get-regexp` of user.name and user.email,
nothing else), lets the settings `git_author_name`/`git_author_email` replace them, and writes those two alone to a
file of its own (`identity_file`) that every program gets as its global git config (GIT_CONFIG_GLOBAL, shown
read-only). So a repository's own user.name and a `git -c user.name=…` still win over it, as they do over the
user's own global config.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_sections.servers.shell_ops.homes import homes_root

logger = logging.getLogger("mcp_sections.shell_ops")

KEYS = ("user.name", "user.email")
HOST_READ_TIMEOUT = 5.0
#: What git prints when it has no identity for a commit, a tag, a merge or a rebase.
UNKNOWN_IDENTITY = (
    "Author identity unknown",
    "Committer identity unknown",
    "Please tell me who you are",
    "empty ident name",
    "unable to auto-detect email address",
)
#: What git prints when it cannot write its global config (/dev/null, or the identity file: both read-only mounts).
UNWRITABLE_CONFIG = ("could not write config file", "could not lock config file")
SETTINGS_VARIABLES = "MCP_SECTIONS_SHELL_OPS_GIT_AUTHOR_NAME / _EMAIL"


@dataclass(frozen=True)
class GitIdentity:
    """The commit identity programs get: each value with where it came from ("settings", "host git config")."""

    name: str | None = None
    email: str | None = None
    name_from: str | None = None
    email_from: str | None = None

    @property
    def complete(self) -> bool:
        return bool(self.name and self.email)

    def describe(self) -> dict[str, str | None]:
        """For list_safe_commands: the identity and where it comes from."""
        origins = dict.fromkeys(origin for origin in (self.name_from, self.email_from) if origin)
        return {"name": self.name, "email": self.email, "source": " and ".join(origins) or None}


def one_line(value: str | None) -> str | None:
    """`value` stripped, or None when it is empty or holds a control character (no name or address does)."""
    text = (value or "").strip()
    if not text or any(ord(char) < 0x20 or ord(char) == 0x7F for char in text):
        return None
    return text


def host_identity(git: str | None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """user.name and user.email from the user's own global git config, read on the host by the system's `git` with
    the server's real HOME (includes followed, as `git config --global --includes`); {} when git or they are
    missing. Nothing else of that config is read, and no program it names runs (`git config` runs none)."""
    if git is None:
        return {}
    source = os.environ if environ is None else environ
    env = {
        "PATH": os.path.dirname(git),
        "HOME": source.get("HOME") or os.path.expanduser("~"),
        "LANG": "C.UTF-8",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        **{key: source[key] for key in ("XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL") if source.get(key)},
    }
    pattern = "^(" + "|".join(key.replace(".", r"\.") for key in KEYS) + ")$"
    try:
        result = subprocess.run(
            [git, "--no-pager", "config", "--global", "--includes", "--get-regexp", "-z", pattern],
            cwd="/",
            env=env,
            capture_output=True,
            timeout=HOST_READ_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        logger.info("could not read the commit identity from the host's git config: %s", exc)
        return {}
    found: dict[str, str] = {}
    for record in result.stdout.decode("utf-8", errors="replace").split("\0"):
        key, _, value = record.partition("\n")
        if key.lower() in KEYS and (text := one_line(value)) is not None:
            found[key.lower()] = text  # the last one wins, as in git
    return found


def git_identity(name: str | None, email: str | None, host: Mapping[str, str]) -> GitIdentity:
    """The settings' values, each one missing taken from the host's git config."""
    name, email = one_line(name), one_line(email)
    host_name, host_email = (None, None) if name and email else (host.get("user.name"), host.get("user.email"))
    return GitIdentity(
        name=name or host_name,
        email=email or host_email,
        name_from="settings" if name else "host git config" if host_name else None,
        email_from="settings" if email else "host git config" if host_email else None,
    )


def config_text(identity: GitIdentity) -> str:
    """The programs' global git config: the identity alone, each value quoted and escaped as git reads it."""
    lines = ["# mcp-sections: the global git config of shell_ops' programs (the commit identity only)", "[user]"]
    for key, value in (("name", identity.name), ("email", identity.email)):
        if value:
            quoted = value.replace("\\", "\\\\").replace('"', '\\"')
            lines.append(f'\t{key} = "{quoted}"')
    return "\n".join(lines) + "\n"


def identity_file(identity: GitIdentity) -> Path | None:
    """The file holding `identity` as a git config (read-only, in this server's homes directory: written again when
    something removed it), or None when there is no identity to give."""
    if not (identity.name or identity.email):
        return None
    path = homes_root() / "gitconfig"
    text = config_text(identity)
    try:
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            return path  # else missing or changed: written (again)
        descriptor, draft = tempfile.mkstemp(prefix=".gitconfig-", dir=path.parent)
    except OSError as exc:
        logger.warning("could not write the programs' git identity to %s: %s", path, exc)
        return None
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(draft, 0o444)
        os.replace(draft, path)
    except OSError as exc:
        logger.warning("could not write the programs' git identity to %s: %s", path, exc)
        with contextlib.suppress(OSError):
            os.unlink(draft)
        return None
    return path


def git_hint(
    program: str, args: Sequence[str], exit_code: int | None, stderr: str, identity: GitIdentity, config: Path
) -> str | None:
    """How to fix a failed command whose output shows git without an identity, or `git config --global` unable to
    write (the programs' global config is not theirs); None otherwise."""
    if exit_code == 0:
        return None
    settings = (
        f"set `git_author_name` and `git_author_email` under [sections.shell_ops] in {config} (or "
        f"{SETTINGS_VARIABLES} in the server's environment) and restart the server"
    )
    if any(marker in stderr for marker in UNKNOWN_IDENTITY):
        return (
            f"git has no identity for this commit: programs run with a private HOME, so your ~/.gitconfig is not "
            f"read there, and {_missing(identity)}. To fix it, {settings}; or give this command one: "
            '`git -c user.name="Your Name" -c user.email=you@example.com commit …`; or set it in this repository\'s '
            "own config: `git config user.name …` and `git config user.email …` (without --global)."
        )
    if program == "git" and "config" in args and "--global" in args and any(m in stderr for m in UNWRITABLE_CONFIG):
        return (
            "`git config --global` cannot write here: each program gets a private HOME for this one command, and its "
            "global git config is not writable (it holds only the commit identity the server gives, if any). For "
            f"the commit identity, {settings} (without them, your own `git config --global` user.name and user.email "
            "on the server's machine are used). For any other setting use `git config NAME VALUE` without --global "
            "(this repository's own .git/config, which lives in the project), or `git -c NAME=VALUE` for one command."
        )
    return None


def _missing(identity: GitIdentity) -> str:
    """What the server knows of the identity, said for a hint."""
    if not (identity.name or identity.email):
        return (
            "neither the settings nor the server's own git config (`git config --global` on its machine) give a "
            "user.name and user.email"
        )
    values = (("user.name", identity.name, identity.name_from), ("user.email", identity.email, identity.email_from))
    known = " and ".join(f"{key} from the {origin}" for key, value, origin in values if value)
    return f"it has only {known}" if not identity.complete else f"it got {known}, which git refused"
