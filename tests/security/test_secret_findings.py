"""Issue #38, secrets: nothing a program writes decides what is secret (findings 8, 9 and 10), through the real
shell_ops server and its sandbox, each attack decoded as an attacker would.

- 8. The walk for protected files skipped directories by names and markers programs can write: a `CACHEDIR.TAG` in
  the home, a `pyvenv.cfg` next to a `.env`, a folder renamed `node_modules` or moved into `.git` made the AWS keys,
  `.pgpass`, `.netrc` and `.env` readable by the next program (and after a restart the masker never learnt them).
  Now every directory is walked, and only content decides what stays visible (certificates, content committed or
  installed as it is).
- 9. Values learnt from the protected files shared one bounded pool with values learnt from output: printing 1,500
  token-shaped strings evicted them, and a copy of a `.env` value printed in plain text. Now they have a pool of their
  own, whose bound fails closed (no program runs while values are left out).
- 10. Masking gaps: values of protected files were learnt only when a detector flagged them (`DB_URL_PART=...`);
  JSON's `\\uXXXX` escapes, base32 and rot13 of a known value were not recognised; and two read_process_output
  windows (`offset`) could each show one end of a 16-character password, each too short to be masked alone.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import contextlib
import hashlib
import os
import re
import secrets
import shutil
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.confinement.secrets import values as secret_values
from mcp_sections.shared.confinement.secrets.files import protected_paths
from mcp_sections.shared.confinement.secrets.masking import MASK
from tests.in_memory import section_in_memory
from tests.shell_ops.repos import git, make_repo
from tests.stdio import call, error_of, section_client

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin") is None,
    reason="bubblewrap is not installed (apt-get install bubblewrap); shell_ops refuses commands without it",
)

_RANDOM = uuid.uuid4().hex + uuid.uuid4().hex
AWS_SECRET = "wJalr" + _RANDOM[:30] + "EXAMPLE"
PGPASS = "Pg" + _RANDOM[30:44] + "q9"
NETRC = "Nr" + _RANDOM[44:58] + "x7"
DOTENV = "Dv" + _RANDOM[10:34] + "Q7"  # no shape a detector knows: only its file says it is secret
TARGETS = {
    ".aws/credentials": AWS_SECRET,
    ".pgpass": PGPASS,
    ".netrc": NETRC,
    "proj/.env": DOTENV,
}
CERTIFICATE = (
    "# Issuer: CN=Example Root\n-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n"
)
KEY = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + _RANDOM[:32] + "\n-----END PRIVATE KEY-----\n"

READ_XORED = """
import os, sys
for path in (bytes.fromhex(arg).decode() for arg in sys.argv[1:]):  # a protected name as argument is refused
    try:
        data = open(path, "rb").read()
        print(path, "reads", len(data), bytes(byte ^ 0x5A for byte in data).hex() or "-")
    except OSError as exc:
        print(path, "refused", type(exc).__name__)
"""
FORGERIES = {
    "cachedir-tag-in-the-home": (
        "open('CACHEDIR.TAG', 'w').write('Signature: 8a477f597d28d172789f06886806bc55\\n')",
        TARGETS,
    ),
    "pyvenv-cfg-next-to-the-env": ("open('proj/pyvenv.cfg', 'w').write('home = /usr/bin\\n')", TARGETS),
    "renamed-to-node-modules": ("import os; os.rename('proj', 'node_modules')", {"node_modules/.env": DOTENV}),
    "moved-into-dot-git": (
        "import os; os.makedirs('.git', exist_ok=True); os.rename('proj', '.git/proj')",
        {".git/proj/.env": DOTENV},
    ),
    "renamed-to-lib-python": (
        "import os; os.makedirs('lib', exist_ok=True); os.rename('proj', 'lib/python3.11')",
        {"lib/python3.11/.env": DOTENV},
    ),
}


def make_home(base: Path) -> Path:
    """A home directory served as a root, with the usual credentials in it."""
    home = base / "home"
    (home / ".aws").mkdir(parents=True)
    (home / "proj").mkdir()
    (home / ".aws" / "credentials").write_text(
        f"[default]\naws_access_key_id = AKIA{_RANDOM[:16].upper()}\naws_secret_access_key = {AWS_SECRET}\n"
    )
    (home / ".pgpass").write_text(f"db.example.com:5432:app:me:{PGPASS}\n")
    (home / ".netrc").write_text(f"machine api.example.com login me password {NETRC}\n")
    (home / "proj" / ".env").write_text(f"API_KEY={DOTENV}\nDEBUG=1\n")
    (home / "read.py").write_text(READ_XORED)
    return home


def server_env(home: Path) -> dict[str, str]:
    """The data directory beside the home; a server started as a process imports what this one does (PYTHONPATH)."""
    env = {"MCP_SECTIONS_DATA_DIR": str(home.parent / "data"), "MCP_SECTIONS_CONFIG": os.devnull}
    return env | ({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {})


async def read(shell: Client, targets: dict[str, str]) -> str:
    """What the XOR-ing reader shows of the targets (an arbitrary transform: only hiding stops it)."""
    return await run(shell, "python3", "read.py", *(path.encode().hex() for path in targets))


async def run(shell: Client, *command: str) -> str:
    result = await call(shell, "run_command", command=list(command))
    assert result["sandbox"] == "bubblewrap"
    return result["stdout"] + result["stderr"]


def leaks(output: str, targets: dict[str, str]) -> list[str]:
    """The targets a program could read: any byte of them, or their secret once the XOR is undone."""
    found = []
    for line in output.splitlines():
        path, _, rest = line.partition(" reads ")
        if rest and path in targets:
            size, data = rest.split(" ", 1)
            plain = bytes(byte ^ 0x5A for byte in bytes.fromhex(data if data != "-" else ""))
            if int(size) > 0 or targets[path].encode() in plain:
                found.append(path)
    return found


# -- 8. no marker or name a program writes makes the walk skip a directory ----------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("forgery", list(FORGERIES), ids=list(FORGERIES))
async def test_a_marker_or_name_a_program_writes_does_not_unhide_the_credentials(tmp_path: Path, forgery: str) -> None:
    home = make_home(tmp_path)
    plant, targets = FORGERIES[forgery]
    async with section_in_memory("shell_ops", "--root", str(home), env=server_env(home)) as shell:
        before = await read(shell, TARGETS)
        assert leaks(before, TARGETS) == [], before
        (home / "plant.py").write_text(plant)
        await run(shell, "python3", "plant.py")
        after = await read(shell, targets)
    assert leaks(after, targets) == [], after
    for secret in targets.values():
        assert secret not in after


@pytest.mark.anyio
async def test_after_a_restart_the_forged_markers_hide_nothing_and_the_values_are_masked(tmp_path: Path) -> None:
    """The attack as it was found: plant every marker, let the server restart (a new process walks afresh), read."""
    home = make_home(tmp_path)
    (home / "notes.txt").write_text(f"copies: {PGPASS} {NETRC} {DOTENV}\n")
    plant = "; ".join(FORGERIES[name][0] for name in ("cachedir-tag-in-the-home", "pyvenv-cfg-next-to-the-env"))
    async with section_in_memory("shell_ops", "--root", str(home), env=server_env(home)) as shell:
        (home / "plant.py").write_text(plant)
        await run(shell, "python3", "plant.py")
    async with section_client("shell_ops", "--root", str(home), env=server_env(home)) as shell:
        after = await read(shell, TARGETS)
        copies = await run(shell, "cat", "notes.txt")
    assert leaks(after, TARGETS) == [], after
    assert copies == f"copies: {MASK} {MASK} {MASK}\n"  # and the new process's walk learnt their values


def test_content_decides_what_stays_visible(tmp_path: Path) -> None:
    """Certificates, content committed or installed as it is: a program cannot forge any of them without knowing the
    content. A RECORD a program writes lists a hash it cannot compute for a file it cannot read."""
    root = tmp_path / "root"
    site = root / "venv" / "lib" / "python3.12" / "site-packages"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg-1.0.dist-info").mkdir()
    (site / "pkg" / "server.key").write_text(KEY)  # a package's test key, installed as pip recorded it
    (site / "pkg" / "changed.key").write_text(KEY)
    digest = base64.urlsafe_b64encode(hashlib.sha256(KEY.encode()).digest()).rstrip(b"=").decode()
    (site / "pkg-1.0.dist-info" / "RECORD").write_text(
        f"pkg/server.key,sha256={digest},{len(KEY)}\npkg/changed.key,sha256={digest},{len(KEY)}\n"
        f"pkg/forged.key,sha256={'A' * 43},10\n"
    )
    (site / "pkg" / "changed.key").write_text(KEY.replace("MIIE", "MIIF"))  # edited after the install
    (site / "pkg" / "forged.key").write_text(KEY.replace("MIIE", "MIIG"))
    (site / "certifi").mkdir()
    (site / "certifi" / "cacert.pem").write_text(CERTIFICATE * 3)  # a CA bundle: public
    (root / "ca-and-key.pem").write_text(CERTIFICATE + KEY)  # a certificate with its key: secret
    (root / "id_ed25519.pub").write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGr2 me@host\n")
    (root / "empty.env").write_text("")
    make_repo(root / "repo")
    (root / "repo" / ".env.example").write_text("API_KEY=\n")
    git(root / "repo", "add", "-f", ".env.example")
    git(root / "repo", "commit", "-q", "-m", "template")
    hidden = {str(path.relative_to(root)) for path in protected_paths(PathGuard([root]))}
    in_site = "venv/lib/python3.12/site-packages/pkg"
    assert hidden == {"ca-and-key.pem", f"{in_site}/changed.key", f"{in_site}/forged.key"}


# -- 9. values learnt from files are never evicted by program output ------------------------------------------------

FLOOD = "import secrets\nfor _ in range(1500):\n    print('ghp_' + secrets.token_hex(18))\n"


@pytest.fixture
async def flooded(tmp_path: Path) -> AsyncIterator[tuple[Client, Path]]:
    home = make_home(tmp_path)
    (home / "notes.txt").write_text(f"the url part is {DOTENV}\n")
    (home / "flood.py").write_text(FLOOD)
    async with section_in_memory("shell_ops", "--root", str(home), env=server_env(home)) as shell:
        yield shell, home


@pytest.mark.anyio
async def test_printing_1500_tokens_does_not_evict_the_values_of_the_protected_files(
    flooded: tuple[Client, Path],
) -> None:
    shell, _ = flooded
    assert DOTENV not in await run(shell, "cat", "notes.txt")
    flood = await run(shell, "python3", "flood.py")
    assert flood.count(MASK) == 1500  # each one masked by shape, and learnt
    shown = await run(shell, "cat", "notes.txt")
    assert DOTENV not in shown and MASK in shown, shown


@pytest.mark.anyio
async def test_the_pool_of_file_values_fails_closed_when_full(
    flooded: tuple[Client, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """More values in the protected files than the bound: no program runs (MAX_LIMIT_EXCEEDED, naming the files),
    until they fit again."""
    shell, home = flooded
    await run(shell, "ls")
    monkeypatch.setattr(secret_values, "MAX_SOURCE_CHARS", 4096, raising=False)
    stash = home / "stash"
    stash.mkdir()
    for number in range(4):
        values = "\n".join(f"API_KEY_{line}={secrets.token_urlsafe(30)}" for line in range(40))
        (stash / f"{number}.env").write_text(values + "\n")
    result = await shell.call_tool("run_command", {"command": ["ls"]})
    code, message = error_of(result)
    assert code == "MAX_LIMIT_EXCEEDED" and "stash/" in message and "Move the keys" in message, message
    shutil.rmtree(stash)
    assert await run(shell, "cat", "notes.txt") == f"the url part is {MASK}\n"


# -- 10. every value of a protected file is learnt; more encodings; windows masked as one stream -------------------

_OTHER = uuid.uuid4().hex
NAMELESS = "s3cr3tV4lue99" + _OTHER[:4]  # assigned under a name nothing takes for secret
ACCENTED = f"Zq{_OTHER[4:8]}ä7pL{_OTHER[8:12]}ü8nR{_OTHER[12:15]}öX"  # ensure_ascii cuts it every 6 characters
PASSWORD = "Pw" + _OTHER[15:29]  # 16 characters
ENCODE = r"""
import base64, codecs, json, sys
mode, text = sys.argv[1], open("copies.txt", encoding="utf-8").read()
data = text.encode()
if mode == "json":
    print(json.dumps(text))  # ensure_ascii: every non-ASCII character as \uXXXX
elif mode == "json-every-character":
    print("".join("\\u%04x" % ord(char) for char in text))
elif mode == "x-escapes":
    print("".join("\\x%02x" % byte for byte in data))
elif mode == "base32-cut":
    print(base64.b32encode(data).decode()[13:])  # a piece starting inside a group
elif mode.startswith("base32"):
    encoded = base64.b32encode(b"x" * int(mode[-1]) + data).decode()  # the value at each byte of a 5-byte group
    print("\n".join(encoded[at : at + 76] for at in range(0, len(encoded), 76)))  # as `base32` wraps it
elif mode == "rot13":
    print(codecs.encode(text, "rot13"))
"""
ENCODINGS = ["json", "json-every-character", "x-escapes", *(f"base32-{skip}" for skip in range(5))]
ENCODINGS += ["base32-cut", "rot13"]
WINDOWED = """
import secrets, sys
password = open("copies.txt").read().split()[-1]  # a known value
token = "ghp_" + secrets.token_hex(18)  # a value only its shape tells
sys.stdout.write("x" * 250 + password + "y" * 300 + "\\n" + "q" * 240 + token + "\\n")
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gaps") / "project"
    (root / "config").mkdir(parents=True)
    (root / ".env").write_text(f'DB_URL_PART={NAMELESS}\nAPI_KEY="{ACCENTED}"\nDB_PASSWORD={PASSWORD}\nDEBUG=1\n')
    (root / "config" / "credentials.json").write_text(f'{{"endpoint": "https://api.example.com", "shard": "{DOTENV}"}}')
    (root / "copies.txt").write_text(f"{NAMELESS} {DOTENV} {ACCENTED} {PASSWORD}\n", encoding="utf-8")
    (root / "encode.py").write_text(ENCODE)
    (root / "windowed.py").write_text(WINDOWED)
    return root


@pytest.fixture(scope="module")
async def gaps(project: Path) -> AsyncIterator[Client]:
    async with section_in_memory("shell_ops", "--root", str(project), env=server_env(project)) as shell:
        yield shell


@pytest.mark.anyio
async def test_every_value_a_protected_file_assigns_is_learnt(gaps: Client) -> None:
    """`DB_URL_PART=...` has no name a detector knows, `shard` no secret field name: their files say enough."""
    shown = await run(gaps, "cat", "copies.txt")
    assert shown == f"{MASK} {MASK} {MASK} {MASK}\n", shown


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ENCODINGS)
async def test_escaped_base32_and_rot13_copies_are_masked(gaps: Client, mode: str) -> None:
    out = await run(gaps, "python3", "encode.py", mode)
    assert MASK in out, out
    readings = [
        out,
        codecs.encode(out, "rot13"),
        out.encode("latin-1", "replace").decode("unicode_escape", "replace"),
        "".join(chr(int(code, 16)) for code in re.findall(r"\\u([0-9a-f]{4})", out)),
    ]
    for skip in range(8):
        letters = "".join(re.findall(r"[A-Z2-7]+", out))[skip:]
        with contextlib.suppress(binascii.Error, ValueError):
            readings.append(base64.b32decode(letters[: len(letters) // 8 * 8]).decode("latin-1"))
    for secret in (ACCENTED, PASSWORD, NAMELESS, DOTENV):  # the first two are learnt by shape alone too
        ascii_part = secret.encode("ascii", "ignore").decode()
        for reading in readings:
            assert secret not in reading and ascii_part[:12] not in reading, (mode, reading)


@pytest.mark.anyio
async def test_two_windows_of_a_process_output_do_not_each_show_one_end_of_a_password(gaps: Client) -> None:
    started = await call(gaps, "start_process", command=["python3", "windowed.py"], wait_seconds=10)
    process = started["process"]["process_id"]
    assert PASSWORD not in started["output"] and MASK in started["output"], started["output"]
    first = await call(gaps, "read_process_output", process_id=process, offset=0, max_bytes=258)
    second = await call(gaps, "read_process_output", process_id=process, offset=258, max_bytes=256)
    assert first["next_offset"] == 258 and first["output"].startswith("x" * 250), first
    assert PASSWORD[:8] not in first["output"] and PASSWORD[8:] not in second["output"], (first, second)
    assert first["output"].endswith(MASK) and second["output"].startswith(MASK)
    third = await call(gaps, "read_process_output", process_id=process, offset=567, max_bytes=256)  # 16 of 40
    fourth = await call(gaps, "read_process_output", process_id=process, offset=823, max_bytes=256)
    assert third["output"] == "q" * 240 + MASK and fourth["output"] == MASK + "\n", (third, fourth)
