"""Issue #20, secrets: the red team's re-encodings, through the real shell_ops server over stdio and its sandbox.

"Masking by shape is beaten by any re-encoding: `jq -Rr @base64`, `jq explode`, `grep -o .`, reversing, case
changes, printing the token body without its prefix, or two calls with `head -c` / `tail -c`." Each class here
failed on the code before this change:

- the deny-listed files (`.env`, a key, `~/.ssh`) are hidden from programs: a script's `open()`, `grep -r`,
  and `cat`/`jq`/`base64` through a hard link (a name the argument rules cannot refuse) find nothing;
- a token that `cat` shows masked stays masked when a program re-encodes it, as each trick above, `xxd`, `od`
  and URL-quoting: the test decodes each output as an attacker would and finds no 12-character piece of it;
- values from the deny-listed files and a secret-looking variable of the server's environment are masked
  where a copy of them turns up, in any of those encodings.

Tools: those of the default allow-list (`cat`, `head`, `tail`, `grep`, `jq`, `python3` with a script), plus
`base64`, `rev`, `cut`, `xxd` and `od`, which an operator may allow (generic argument policy). `tr` reads only
standard input, which run_command does not give, so case changes go through `jq ascii_upcase` and a script.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import os
import re
import shutil
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import unquote

import pytest
from mcp import Client

from mcp_sections.servers.shell_ops.policies.allow_list import DEFAULT_ALLOWED_PROGRAMS
from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.confinement.secrets import values as secret_values
from mcp_sections.shared.confinement.secrets.files import file_values, hidden_from_programs, protected_paths
from mcp_sections.shared.confinement.secrets.masking import MASK
from mcp_sections.shared.confinement.secrets.values import MIN_FRAGMENT
from tests.in_memory import section_in_memory
from tests.shell_ops.repos import git, make_repo
from tests.stdio import call

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin") is None,
    reason="bubblewrap is not installed (apt-get install bubblewrap); shell_ops refuses commands without it",
)

_RANDOM = uuid.uuid4().hex + uuid.uuid4().hex
GITHUB_TOKEN = "ghp_" + "".join(c.upper() if i % 3 == 0 else c for i, c in enumerate(_RANDOM[:36]))
DOTENV_VALUE = "Dv" + _RANDOM[36:60] + "Q7"  # no shape a detector knows: only its file says it is secret
ENV_SECRET = "Ev" + _RANDOM[:8] + "X" + _RANDOM[40:60]  # in the server's environment, as DEPLOY_TOKEN
PASSWORD = f"p@ss/{_RANDOM[:6]}+Zq=K7{_RANDOM[6:10]}"  # URL-encoding changes it
KEY_BODY = base64.b64encode(bytes.fromhex(_RANDOM) * 3).decode()
SSH_BODY = base64.b64encode(bytes.fromhex(_RANDOM[::-1]) * 2).decode()
EXTRA_PROGRAMS = ("base64", "rev", "cut", "xxd", "od")

READ_PROTECTED = """
import base64, os
for path in PATHS:  # written into the script: an argument naming them would be refused before it runs
    try:
        if os.path.isdir(path):
            print(path, "lists", sorted(os.listdir(path)))
        else:
            data = open(path, "rb").read()
            print(path, "reads", len(data), "bytes", base64.b64encode(data).decode())
    except OSError as exc:
        print(path, "refused", type(exc).__name__)
"""
ENCODE = """
import sys, urllib.parse
mode, text = sys.argv[1], open(sys.argv[2]).read()
print({"upper": text.upper, "swapcase": text.swapcase, "quote": lambda: urllib.parse.quote(text, safe="")}[mode]())
"""
RENAME = """
import os
os.rename("config", "moved-config")
print("renamed")
"""


def reader(root: Path, *paths: str) -> str:
    """A script that reports what it can read of `paths` (base64 of the bytes: no shape for the masker)."""
    script = root / f"read-{uuid.uuid4().hex[:8]}.py"
    script.write_text(READ_PROTECTED.replace("PATHS", repr(paths)))
    return script.name


CERTIFICATE = (
    "# Issuer: CN=Example Root\n-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n"
)


def key_block(body: str) -> str:
    lines = [body[at : at + 64] for at in range(0, len(body), 64)]
    return "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END OPENSSH PRIVATE KEY-----\n"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("reencoding") / "root"
    (root / ".ssh").mkdir(parents=True)
    (root / ".env").write_text(f'API_KEY={DOTENV_VALUE}\nDB_PASSWORD="{PASSWORD}"\nDEBUG=1\n')
    os.link(root / ".env", root / "env-backup.txt")  # the user's own backup: a name the argument rules allow
    (root / "deploy.key").write_text(key_block(KEY_BODY))
    (root / ".ssh" / "id_ed25519").write_text(key_block(SSH_BODY))
    (root / ".ssh" / "config").write_text("Host example\n  User me\n")
    (root / "settings.py").write_text(f'GITHUB_TOKEN = "{GITHUB_TOKEN}"\n')
    (root / "notes.txt").write_text(
        f"staging uses {DOTENV_VALUE}\ndeploy with {ENV_SECRET}\nthe key starts {KEY_BODY[64:128]}\n"
        f"the database wants {PASSWORD}\n"
    )
    (root / "config").mkdir()
    (root / "config" / ".env.production").write_text(f"SESSION_SECRET={DOTENV_VALUE[::-1]}\n")
    (root / "encode.py").write_text(ENCODE)
    (root / "rename.py").write_text(RENAME)
    return root


@pytest.fixture(scope="module")
async def shell(root: Path) -> AsyncIterator[Client]:
    env = {
        "DEPLOY_TOKEN": ENV_SECRET,
        "MCP_SECTIONS_DATA_DIR": str(root.parent / "data"),
        "MCP_SECTIONS_SHELL_OPS_ALLOWED_PROGRAMS": ",".join([*DEFAULT_ALLOWED_PROGRAMS, *EXTRA_PROGRAMS]),
    }
    async with section_in_memory("shell_ops", "--root", str(root), env=env) as client:
        yield client


async def output(shell: Client, *command: str) -> str:
    result = await call(shell, "run_command", command=list(command))
    assert result["sandbox"] == "bubblewrap"
    return result["stdout"] + result["stderr"]


# -- what an attacker recovers from an output -----------------------------------------------------------------


def recovered(text: str) -> list[str]:
    """Every reading of `text` an attacker would try: as it is, without whitespace (one character per line),
    reversed, URL-decoded, its number runs as characters (code points, od's octal bytes and words, hex words),
    its hex and base64 runs decoded (each alignment, standard and URL-safe alphabets)."""
    joined = "".join(text.split())
    readings = [text, joined, text[::-1], unquote(text)]
    numbers = re.findall(r"[0-9a-fA-F]+", text)
    readings.append("".join(chr(int(n)) for n in numbers if n.isdigit() and int(n) < 0x110000))
    octal = [n for n in numbers if re.fullmatch("[0-7]+", n)]
    readings.append("".join(chr(int(n, 8)) for n in octal if len(n) <= 3))
    for words in ([int(n, 8) for n in octal if len(n) == 6], [int(n, 16) for n in numbers if len(n) == 4]):
        readings.append("".join(chr(w & 0xFF) + chr(w >> 8 & 0xFF) for w in words if w < 0x10000))
    for run in re.findall(r"[0-9a-fA-F]{2,}", joined):
        for start in (0, 1):
            piece = run[start:]
            readings.append(binascii.unhexlify(piece[: len(piece) // 2 * 2]).decode("latin-1"))
    for run in re.findall(r"[A-Za-z0-9+/_=-]{8,}", joined):
        for start in range(4):
            piece = run[start:].rstrip("=").replace("-", "+").replace("_", "/")
            piece = piece[: len(piece) // 4 * 4]
            with contextlib.suppress(binascii.Error, ValueError):
                readings.append(base64.b64decode(piece).decode("latin-1"))
    return readings


def leaked_piece(text: str, secret: str) -> str | None:
    """A piece of `secret` of MIN_FRAGMENT characters that some reading of `text` shows (case ignored)."""
    readings = [reading.lower() for reading in recovered(text)]
    lowered = secret.lower()
    for start in range(len(lowered) - MIN_FRAGMENT + 1):
        piece = lowered[start : start + MIN_FRAGMENT]
        if any(piece in reading for reading in readings):
            return piece
    return None


# -- 1. the deny-listed files cannot be read by programs --------------------------------------------------------

PROTECTED = {".env": DOTENV_VALUE, "deploy.key": KEY_BODY, ".ssh/id_ed25519": SSH_BODY}


@pytest.mark.anyio
async def test_a_script_cannot_open_the_protected_files(shell: Client, root: Path) -> None:
    out = await output(shell, "python3", reader(root, ".env", "deploy.key", ".ssh/id_ed25519", ".ssh"))
    for path in (".env", "deploy.key", ".ssh/id_ed25519"):
        assert f"{path} refused" in out or f"{path} reads 0 bytes" in out, out
    assert ".ssh lists []" in out, out
    for secret in PROTECTED.values():
        assert leaked_piece(out, secret) is None


@pytest.mark.anyio
@pytest.mark.parametrize(
    "command",
    [
        ["grep", "-r", "-h", "-e", "API_KEY", "-e", "BEGIN", "."],
        ["cat", "env-backup.txt"],
        ["jq", "-R", ".", "env-backup.txt"],
        ["base64", "env-backup.txt"],
        ["grep", "-h", "", "env-backup.txt"],
    ],
    ids=["grep-r", "cat-hard-link", "jq-hard-link", "base64-hard-link", "grep-hard-link"],
)
async def test_recursive_and_hard_linked_reads_find_nothing(shell: Client, command: list[str]) -> None:
    """`grep -r` opens the files itself; a hard link is the same file under a name no deny glob matches."""
    out = await output(shell, *command)
    assert "API_KEY" not in out and "BEGIN OPENSSH" not in out and MASK not in out, out
    for secret in PROTECTED.values():
        assert leaked_piece(out, secret) is None


@pytest.mark.anyio
async def test_a_protected_file_created_later_or_moved_is_hidden_from_the_next_command(
    shell: Client, root: Path
) -> None:
    await output(shell, "ls")
    (root / "late").mkdir()
    (root / "late" / ".env.local").write_text(f"LATE={DOTENV_VALUE}\n")  # written by the user, between commands
    out = await output(shell, "python3", reader(root, "late/.env.local"))
    assert "late/.env.local refused" in out or "reads 0 bytes" in out, out
    # a program cannot move a hidden file, but it can rename the directory holding it
    assert "renamed" in await output(shell, "python3", "rename.py")
    out = await output(shell, "python3", reader(root, "moved-config/.env.production"))
    assert "refused" in out or "reads 0 bytes" in out, out
    assert leaked_piece(out, DOTENV_VALUE[::-1]) is None


# -- 2. a token cat shows masked stays masked, however a program re-encodes it ----------------------------------

TRICKS: list[tuple[str, list[str]]] = [
    ("base64", ["base64", "settings.py"]),
    ("base64-unwrapped", ["base64", "-w", "0", "settings.py"]),
    ("jq-base64", ["jq", "-Rr", "@base64", "settings.py"]),
    ("jq-explode", ["jq", "-R", "explode", "settings.py"]),
    ("jq-explode-compact", ["jq", "-cR", "explode", "settings.py"]),
    ("jq-uri", ["jq", "-Rr", "@uri", "settings.py"]),
    ("jq-reversed", ["jq", "-Rr", "explode | reverse | implode", "settings.py"]),
    ("jq-upper", ["jq", "-Rr", "ascii_upcase", "settings.py"]),
    ("grep-o-dot", ["grep", "-o", ".", "settings.py"]),
    ("rev", ["rev", "settings.py"]),
    ("python-upper", ["python3", "encode.py", "upper", "settings.py"]),
    ("python-swapcase", ["python3", "encode.py", "swapcase", "settings.py"]),
    ("python-url-quote", ["python3", "encode.py", "quote", "settings.py"]),
    ("cut-body-without-prefix", ["cut", "-c21-", "settings.py"]),
    ("head-c-first-half", ["head", "-c", "36", "settings.py"]),
    ("tail-c-second-half", ["tail", "-c", "21", "settings.py"]),
    ("xxd-p", ["xxd", "-p", "settings.py"]),
    ("xxd", ["xxd", "settings.py"]),
    ("od", ["od", "settings.py"]),
    ("od-x", ["od", "-x", "settings.py"]),
    ("od-b", ["od", "-b", "settings.py"]),
    ("od-c", ["od", "-c", "settings.py"]),
    ("od-tx1", ["od", "-An", "-tx1", "settings.py"]),
]


@pytest.mark.anyio
@pytest.mark.parametrize("command", [c for _, c in TRICKS], ids=[i for i, _ in TRICKS])
async def test_a_token_cat_shows_masked_stays_masked_when_re_encoded(shell: Client, command: list[str]) -> None:
    shown = await output(shell, "cat", "settings.py")
    assert shown == f'GITHUB_TOKEN = "{MASK}"\n', shown
    out = await output(shell, *command)
    assert MASK in out, out
    assert leaked_piece(out, GITHUB_TOKEN) is None, out


@pytest.mark.anyio
async def test_the_two_halves_of_head_and_tail_are_each_masked(shell: Client) -> None:
    await output(shell, "cat", "settings.py")
    first, second = (
        await output(shell, "head", "-c", "36", "settings.py"),
        await output(shell, "tail", "-c", "21", "settings.py"),
    )
    assert leaked_piece(first + second, GITHUB_TOKEN) is None
    assert GITHUB_TOKEN[:20] not in first and GITHUB_TOKEN[-19:] not in second


# -- 3. values known from the protected files and the environment are masked in copies ------------------------

COPIES: list[tuple[str, list[str]]] = [
    ("cat", ["cat", "notes.txt"]),
    ("base64", ["base64", "notes.txt"]),
    ("jq-explode", ["jq", "-R", "explode", "notes.txt"]),
    ("grep-o-dot", ["grep", "-o", ".", "notes.txt"]),
    ("rev", ["rev", "notes.txt"]),
    ("upper", ["python3", "encode.py", "upper", "notes.txt"]),
    ("xxd-p", ["xxd", "-p", "notes.txt"]),
    ("od", ["od", "notes.txt"]),
    ("jq-uri", ["jq", "-Rr", "@uri", "notes.txt"]),
    ("url-quote", ["python3", "encode.py", "quote", "notes.txt"]),
]
SECRETS = [
    ("from-.env", DOTENV_VALUE),
    ("password-from-.env", PASSWORD),
    ("from-the-environment", ENV_SECRET),
    ("from-a-key-file", KEY_BODY[64:128]),
]


@pytest.mark.anyio
@pytest.mark.parametrize("command", [c for _, c in COPIES], ids=[i for i, _ in COPIES])
@pytest.mark.parametrize("secret", [s for _, s in SECRETS], ids=[i for i, _ in SECRETS])
async def test_known_values_are_masked_in_a_copy_in_every_encoding(
    shell: Client, command: list[str], secret: str
) -> None:
    out = await output(shell, *command)
    assert MASK in out, out
    assert leaked_piece(out, secret) is None, out


# -- 4. the installer's sandbox hides them too -------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_installer_cannot_read_the_projects_protected_files(tmp_path: Path) -> None:
    """install_package runs registry code (an sdist's setup.py) in the project: its `.env` is hidden there."""
    project = tmp_path / "root" / "proj"
    (project / ".venv" / "bin").mkdir(parents=True)
    (project / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (project / ".env").write_text(f"API_KEY={DOTENV_VALUE}\n")
    installer = project / ".venv" / "bin" / "python"  # the project's "interpreter": what pip would run
    installer.write_text("#!/bin/sh\nbase64 .env 2>&1 || echo 'env: unreadable'\n")
    installer.chmod(0o755)
    env = {"MCP_SECTIONS_DATA_DIR": str(tmp_path / "data")}
    async with section_in_memory("file_ops", "--root", str(tmp_path / "root"), env=env) as files:
        data = await call(files, "install_package", manager="pip", packages=["requests"], path=str(project))
    assert "env: unreadable" in data["output"], data["output"]
    assert leaked_piece(data["output"], DOTENV_VALUE) is None


# -- 5. what the walk hides and learns (in-process) ------------------------------------------------------------


def test_the_walk_hides_deny_listed_entries_wherever_they_are_and_leaves_public_content_visible(tmp_path: Path) -> None:
    """No name or marker leaves a directory out (issue #38): `.git`, `node_modules`, a virtual environment, a tagged
    cache are walked like the rest; what stays visible is decided by content (a CA bundle holds only certificates)."""
    root = tmp_path / "home"
    for directory in ("sub", ".aws", "state", "venv", "node_modules", "lib/python3.11/test", "cache", "proj/.git"):
        (root / directory).mkdir(parents=True)
    for path in (".env", "sub/deploy.key", ".aws/credentials", "state/.env", "real.txt"):
        (root / path).write_text("TOKEN=Ab12Cd34Ef56Gh78\n")
    (root / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")  # a virtual environment
    (root / "venv" / "cacert.pem").write_text(CERTIFICATE)  # its CA bundle: public, hiding it would break TLS
    (root / "venv" / "server.key").write_text("x")
    (root / "node_modules" / "server.pem").write_text("x")
    (root / "lib" / "python3.11" / "test" / "keycert.pem").write_text("x")  # hidden as the test package, one mount
    (root / "cache" / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    (root / "cache" / "fetched.pem").write_text("x")
    (root / "proj" / ".git" / "deploy.key").write_text("x")
    (root / "link.env").symlink_to(root / "real.txt")  # a deny-listed link: its target is what a program reads
    (root / "outside.env").symlink_to(tmp_path)
    os.link(root / ".env", root / "env-backup.txt")  # another name of the same file
    guard = PathGuard([root], private=[root / "state"])
    expected = {".env", "sub/deploy.key", ".aws", "real.txt", "env-backup.txt", "venv/server.key"}
    expected |= {"node_modules/server.pem", "lib/python3.11/test", "cache/fetched.pem", "proj/.git/deploy.key"}
    assert {str(path.relative_to(root)) for path in protected_paths(guard)} == expected
    assert hidden_from_programs(guard, [root / "sub"]) == (root / "state", root / "sub" / "deploy.key")
    assert secret_values.KNOWN.spans("x Ab12Cd34Ef56Gh78 x")  # and their values are known


def test_a_committed_template_stays_visible_and_a_committed_secret_with_changes_is_hidden(tmp_path: Path) -> None:
    """Content committed as it is can be read from the repository's objects by any program anyway, and git
    cannot hash a hidden file (`git diff`, `git commit -a` would fail on it)."""
    root = tmp_path / "repo"
    make_repo(root)
    (root / "tests").mkdir()
    (root / ".env.example").write_text("API_KEY=\n")
    (root / "tests" / "server.key").write_text("test fixture\n")
    (root / ".env").write_text("API_KEY=\n")
    git(root, "add", "-f", ".env.example", ".env", "tests")
    git(root, "commit", "-q", "-m", "templates")
    git(root, "gc", "-q")  # objects in a pack too
    (root / ".env").write_text(f"API_KEY={DOTENV_VALUE}\n")  # the template, filled in
    (root / ".env.local").write_text("DEBUG=1\n")  # never committed
    assert {path.name for path in protected_paths(PathGuard([root]))} == {".env", ".env.local"}


def test_values_are_learnt_from_formats_the_detectors_do_not_read() -> None:
    pem = key_block(KEY_BODY)
    credentials = json.dumps({"client_secret": "Cs9dF8gH7jK6lZ5x", "private_key": pem, "client_id": "public-id"})
    assert set(file_values("credentials.json", credentials)) == {"Cs9dF8gH7jK6lZ5x", KEY_BODY}
    assert "Hx7kQ2pL9mN4vR8s" in file_values(".netrc", "machine example.com login me password Hx7kQ2pL9mN4vR8s\n")
    assert "Pg8sQ2wE4rT6yU" in file_values(".pgpass", "# host:port:db:user:password\ndb:5432:app:me:Pg8sQ2wE4rT6yU\n")
    assert "$apr1$Zx$Qw3eR5tY7u" in file_values(".htpasswd", "me:$apr1$Zx$Qw3eR5tY7u\n")
    assert DOTENV_VALUE in file_values(".env", f"API_KEY={DOTENV_VALUE}\nDEBUG=1\n")
