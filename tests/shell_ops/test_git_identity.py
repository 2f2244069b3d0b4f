"""Who commits made through run_command are made as, and what the answer says when git does not know.

Programs run with a private HOME, so the user's ~/.gitconfig is never read there. By default the server gives them
the user.name and user.email of the host's own `git config --global` (nothing else of it), as their global config:
a repository's own identity and `git -c` still win. The settings `git_author_name`/`git_author_email` replace it.
With no identity anywhere, and for `git config --global` (whose file is not the program's to write), the answer's
hint says how to fix it. Real sandboxed git, through the real server (in memory); the "host" is a HOME made here.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from mcp_sections.servers.shell_ops.settings import ShellOpsSettings
from tests.in_memory import section_in_memory
from tests.shell_ops.repos import git, make_repo
from tests.stdio import call

HOST_NAME, HOST_EMAIL = "Ada Host", "ada@host.example"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with one file to commit, a HOME without any git config, and an empty config file."""
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    (tmp_path / "home").mkdir()
    (tmp_path / "config.toml").write_text("")
    root = make_repo(tmp_path / "root")
    (root / "notes.txt").write_text("a note\n")
    return root


def server_env(root: Path, **more: str) -> dict[str, str]:
    home = root.parent / "home"
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "MCP_SECTIONS_CONFIG": str(root.parent / "config.toml"),
        "MCP_SECTIONS_DATA_DIR": str(root.parent / "data"),
        **more,
    }


def host_git_config(root: Path, *pairs: str) -> Path:
    """The host user's ~/.gitconfig, written by git itself: `pairs` are NAME VALUE ..."""
    config = root.parent / "home" / ".gitconfig"
    for name, value in zip(pairs[::2], pairs[1::2], strict=True):
        subprocess.run(["git", "config", "--file", str(config), name, value], check=True)
    return config


@pytest.fixture
async def shell(project: Path) -> AsyncIterator[Client]:
    async with section_in_memory("shell_ops", "--root", str(project), env=server_env(project)) as client:
        yield client


async def commit(client: Client, message: str = "add notes", *options: str) -> dict:
    added = await call(client, "run_command", command=["git", "add", "notes.txt"])
    assert added["exit_code"] == 0, added
    return await call(client, "run_command", command=["git", *options, "commit", "-q", "-m", message])


def last_author(root: Path) -> str:
    return git(root, "log", "-1", "--format=%an <%ae> / %cn <%ce>").strip()


@pytest.mark.anyio
async def test_a_commit_with_no_identity_anywhere_says_how_to_give_one(shell: Client, project: Path) -> None:
    result = await commit(shell)
    assert result["exit_code"] == 128 and "Author identity unknown" in result["stderr"], result
    hint = result.get("hint") or ""
    assert "git_author_name" in hint and "git_author_email" in hint and "[sections.shell_ops]" in hint, result
    assert str(project.parent / "config.toml") in hint  # the config file the server read
    assert '-c user.name="Your Name" -c user.email=' in hint and "private HOME" in hint
    identity = (await call(shell, "list_safe_commands"))["git_identity"]
    assert identity == {"name": None, "email": None, "source": None}

    # Following git's own advice: the program's global config is not its to write, and the hint says what to do.
    configured = await call(shell, "run_command", command=["git", "config", "--global", "user.email", "me@x.org"])
    assert configured["exit_code"] != 0 and "could not write config file" in configured["stderr"], configured
    hint = configured.get("hint") or ""
    assert "private HOME" in hint and "not writable" in hint and "git_author_name" in hint, configured
    assert "without --global" in hint and str(project.parent / "config.toml") in hint

    # What the hint offers works: `-c` for one commit.
    given = await commit(shell, "with -c", "-c", "user.name=Once", "-c", "user.email=once@x.org")
    assert given["exit_code"] == 0 and given["hint"] is None, given
    assert last_author(project) == "Once <once@x.org> / Once <once@x.org>"


@pytest.mark.anyio
async def test_commits_are_made_as_the_host_users_own_git_identity(project: Path) -> None:
    host_git_config(project, "user.name", HOST_NAME, "user.email", HOST_EMAIL)
    # What else a ~/.gitconfig holds never reaches a program: helpers and aliases that run programs, other settings.
    host_git_config(project, "credential.helper", "!touch /tmp/helper-ran", "alias.boom", "!touch boom")
    host_git_config(project, "core.sshCommand", "touch ssh-ran", "init.defaultBranch", "from-host")
    async with section_in_memory("shell_ops", "--root", str(project), env=server_env(project)) as shell:
        result = await commit(shell)
        assert result["exit_code"] == 0 and result.get("hint") is None, result
        assert last_author(project) == f"{HOST_NAME} <{HOST_EMAIL}> / {HOST_NAME} <{HOST_EMAIL}>"
        listed = (await call(shell, "list_safe_commands"))["git_identity"]
        assert listed == {"name": HOST_NAME, "email": HOST_EMAIL, "source": "host git config"}

        seen = await call(shell, "run_command", command=["git", "config", "--global", "--list"])
        assert seen["stdout"].splitlines() == [f"user.name={HOST_NAME}", f"user.email={HOST_EMAIL}"], seen

        # As with the user's own git: the repository's own identity wins, and so does `-c`.
        local = await call(shell, "run_command", command=["git", "config", "user.name", "Repo Local"])
        assert local["exit_code"] == 0, local
        (project / "notes.txt").write_text("a second note\n")
        assert (await commit(shell, "second"))["exit_code"] == 0
        assert last_author(project) == f"Repo Local <{HOST_EMAIL}> / Repo Local <{HOST_EMAIL}>"
        (project / "notes.txt").write_text("a third note\n")
        assert (await commit(shell, "third", "-c", "user.email=cli@x.org"))["exit_code"] == 0
        assert last_author(project) == "Repo Local <cli@x.org> / Repo Local <cli@x.org>"

        # Still not writable: the global config is the server's.
        configured = await call(shell, "run_command", command=["git", "config", "--global", "user.name", "Other"])
        assert configured["exit_code"] != 0 and "not writable" in (configured.get("hint") or ""), configured
    assert not (project / "boom").exists() and not (project / "ssh-ran").exists()


@pytest.mark.anyio
async def test_the_settings_replace_the_host_identity_value_by_value(project: Path) -> None:
    host_git_config(project, "user.name", HOST_NAME, "user.email", HOST_EMAIL)
    env = server_env(project, MCP_SECTIONS_SHELL_OPS_GIT_AUTHOR_NAME='Bot "the" B\\uilder')
    async with section_in_memory("shell_ops", "--root", str(project), env=env) as shell:
        result = await commit(shell)
        assert result["exit_code"] == 0, result
        assert last_author(project) == f'Bot "the" B\\uilder <{HOST_EMAIL}> / Bot "the" B\\uilder <{HOST_EMAIL}>'
        listed = (await call(shell, "list_safe_commands"))["git_identity"]
        assert listed == {"name": 'Bot "the" B\\uilder', "email": HOST_EMAIL, "source": "settings and host git config"}


def test_the_identity_settings_are_one_line() -> None:
    for value in ("Ann\nB", "ann@x.org\rX", "a\x00b"):
        with pytest.raises(ValueError, match="one line"):
            ShellOpsSettings(git_author_name=value)
    assert ShellOpsSettings(git_author_email=" ann@x.org\n").git_author_email == "ann@x.org"
    assert ShellOpsSettings(git_author_name=" ").git_author_name is None
