"""shared.confinement.secrets.masking: what is masked, what is left alone (hashes, ids, names of variables, the
project's own code)."""

from __future__ import annotations

import base64
import json
import re
import secrets
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_types import CallToolResult, ImageContent, TextContent

from mcp_sections.shared.confinement.secrets import patterns as secret_patterns
from mcp_sections.shared.confinement.secrets import values as secret_values
from mcp_sections.shared.confinement.secrets.masking import (
    MASK,
    NEEDS,
    contains_mask,
    could_match,
    mask_result,
    mask_text,
    word_gates,
)
from tests.stdio import REPO

AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"
GITHUB = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"


@pytest.fixture(autouse=True)
def nothing_learnt(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no known values: the registry is process-wide, and what one test's detectors
    masked would otherwise be masked by value in the next one."""
    monkeypatch.setattr(secret_values, "KNOWN", secret_values.KnownSecrets(environ={}))


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("API_KEY=sk-live-123456", "API_KEY=***MASKED***"),
        ("+DB_PASSWORD=hunter22\n", "+DB_PASSWORD=***MASKED***\n"),
        ("export GITHUB_TOKEN='tok-abc-123'", "export GITHUB_TOKEN='***MASKED***'"),
        (".env:3:SECRET_KEY=django-insecure-x", ".env:3:SECRET_KEY=***MASKED***"),
        ('password = "correct horse battery"', 'password = "***MASKED***"'),
        (f"aws key {AWS_KEY} in a log", "aws key ***MASKED*** in a log"),
        (f"token: {GITHUB}", "token: ***MASKED***"),
        ("postgres://app:s3cr3t-pass@db:5432/app", "postgres://app:***MASKED***@db:5432/app"),
        (
            f"GET https://api.softlayer.com/soap/v3.1/{'a1' * 32}",
            "GET https://api.softlayer.com/soap/v3.1/***MASKED***",
        ),
        ("glpat-" + "x" * 24 + " and a glob", "***MASKED*** and a glob"),
        (  # ~/.aws/credentials: the dangerous half of the pair is unquoted and lower-case
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz9k2LmQpR\n",
            "aws_secret_access_key = ***MASKED***\n",
        ),
        ("config.yaml:12:  db_password: Xy7-long-pass # prod", "config.yaml:12:  db_password: ***MASKED*** # prod"),
        (
            "a\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\nz",
            "a\n***MASKED***\nz",
        ),
    ],
)
def test_secret_values_are_masked(text: str, masked: str) -> None:
    assert mask_text(text)[0] == masked


@pytest.mark.parametrize(
    "text",
    [
        "commit 3f2a9c1e4b5d6a7f8e9d0c1b2a3f4e5d6c7b8a9f",
        "id 123e4567-e89b-12d3-a456-426614174000",
        'api_key_env = "OPENAI_API_KEY"  # the NAME of the variable',
        "TOKEN_URL=https://example.com/oauth/token",
        "DB_PASSWORD=${DB_PASSWORD}",
        "password: str = Field(description='the password')",
        "def reset_password(user): ...",
        "PRIMARY_KEY=id",
        "cd $(pwd)",
        "secret_key = settings.SECRET_KEY",
        "token = request.headers.get('x-token')",
        "max_tokens = 4096",
        "NEO4J_PASSWORD_FILE: /run/secrets/neo4j_password",
        'API_KEY = os.environ.get("OPENAI_API_KEY")',
        'KEYS = ("user.name", "user.email")',
        'SECRET_WORDS = frozenset({"TOKEN", "KEY"})',
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert mask_text(text) == (text, 0)


def test_the_projects_own_code_and_docs_have_nothing_to_mask() -> None:
    files = [*REPO.glob("servers/**/*.py"), *REPO.glob("shared/**/*.py"), REPO / "README.md", REPO / "compose.yaml"]
    files.remove(REPO / "shared" / "confinement" / "secrets" / "patterns.py")  # the detectors' own patterns
    flagged = [str(path.relative_to(REPO)) for path in files if mask_text(path.read_text(errors="replace"))[1]]
    assert flagged == []


def test_a_result_is_masked_in_text_and_structured_content_and_images_stay() -> None:
    image = ImageContent(type="image", data="aGVsbG8=", mime_type="image/png")
    result = CallToolResult(
        content=[TextContent(type="text", text=f"out: {GITHUB}"), image],
        structured_content={"stdout": f"API_KEY={GITHUB}\n", "lines": [{"text": GITHUB}], "count": 1},
    )
    masked = mask_result(result)
    assert masked.content[0].text == f"out: {MASK}" and masked.content[1] == image
    assert masked.structured_content == {"stdout": f"API_KEY={MASK}\n", "lines": [{"text": MASK}], "count": 1}
    assert contains_mask(masked.content[0].text) and not contains_mask("plain")


def test_clean_results_come_back_unchanged_and_errors_are_masked_too() -> None:
    clean = CallToolResult(content=[TextContent(type="text", text="ok")], structured_content={"a": "b"})
    assert mask_result(clean) == clean
    error = CallToolResult(
        content=[TextContent(type="text", text=f"timed out; output so far: {GITHUB}")], is_error=True
    )
    assert mask_result(error).content[0].text == f"timed out; output so far: {MASK}"


def test_the_patterns_are_those_of_the_installed_detect_secrets() -> None:
    """shared/confinement/secrets/patterns.py is generated from detect-secrets (dev extra); regenerate it after an
    upgrade."""
    pytest.importorskip("detect_secrets", reason="detect-secrets (dev extra) is the source of the patterns")
    import importlib.util

    spec = importlib.util.spec_from_file_location("generate", REPO / "scripts" / "generate_secret_patterns.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert (REPO / "shared" / "confinement" / "secrets" / "patterns.py").read_text(
        encoding="utf-8"
    ) == generator.render(), "detect-secrets changed: run python scripts/generate_secret_patterns.py"


def test_every_keyword_value_on_a_line_is_masked_not_only_the_first() -> None:
    # detect-secrets reports one match per pattern and line; a minified config holds several on one line
    text = 'db_password = "Tr0ub4dor3xyz"; other_password = "C0rrectH0rse99"; DATABASE_PASS: "x9y8z7w6v5"'
    masked, count = mask_text(text)
    assert count == 3 and "Tr0ub4dor3xyz" not in masked and "C0rrectH0rse99" not in masked and "x9y8" not in masked


def test_a_json_text_block_is_masked_value_by_value() -> None:
    # a result without its own text rendering carries its JSON, where quotes inside values read \"...\"
    text = '{"stdout":"password = \\"Tr0ub4dor3xyz\\"\\napi_key: \\"C0rrectH0rse99\\"","exit_code":0}'
    result = mask_result(CallToolResult(content=[TextContent(type="text", text=text)]))
    shown = result.content[0].text  # type: ignore[union-attr]
    assert "Tr0ub4dor3xyz" not in shown and "C0rrectH0rse99" not in shown and shown.count(MASK) == 2
    assert '"exit_code":0' in shown


GATED = [(plugin, pattern, flags) for plugin, pattern, flags in secret_patterns.PATTERNS if plugin in NEEDS]


@pytest.mark.parametrize(("plugin", "pattern", "flags"), GATED, ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(GATED)])
def test_a_detector_runs_on_every_text_it_could_match(plugin: str, pattern: str, flags: int) -> None:
    """A detector runs only on text holding its words (`NEEDS`, a speed-up): a word list that misses a form
    of the pattern would switch the detector off for it, silently. Texts generated from the pattern itself."""

    @settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.from_regex(re.compile(pattern, flags), fullmatch=True))
    def admitted(text: str) -> None:
        assert could_match(word_gates(NEEDS[plugin]), text, text.lower()), f"{plugin} would not run on {text!r}"

    admitted()


@pytest.mark.parametrize("keyword", secret_patterns.KEYWORD_DENYLIST)
def test_the_keyword_detector_runs_on_every_denylisted_keyword(keyword: str) -> None:
    """The keyword patterns run only on lines holding key/pass/pwd/secret/contrase, at most `_KEYWORD_LEAD`
    characters into the keyword: every spelling of every denylisted keyword must satisfy both."""
    from mcp_sections.shared.confinement.secrets.masking import _KEYWORD_LEAD, DENYLIST_WORDS

    @settings(max_examples=20, deadline=None, database=None)
    @given(st.from_regex(re.compile(keyword, re.IGNORECASE), fullmatch=True))
    def admitted(spelling: str) -> None:
        lowered = spelling.lower()
        assert any(0 <= lowered.find(word) <= _KEYWORD_LEAD for word in DENYLIST_WORDS), spelling
        assert mask_text(f'{spelling} = "hunter2-is-long"')[1] == 1, spelling

    admitted()


# -- masking by value (shared/confinement/secrets/values.py)
# -----------------------------------------------------------------

TOKEN = "ghp_" + "Xk9mQ2vL7pR4tW8nB3cY6hJ1fD5sG0aZ2eU4"


def _encoded(text: str) -> list[str]:
    data = text.encode()
    return [
        *(base64.b64encode(prefix + data).decode() for prefix in (b"", b"x", b"xy")),  # each alignment
        base64.urlsafe_b64encode(b"?" + data).decode(),
        data.hex().upper(),
        quote(text, safe=""),
        text[::-1],
        text.upper(),
        text.swapcase(),
        "\n".join(text),  # grep -o .
        json.dumps([ord(char) for char in text], indent=2),  # jq explode
        " ".join(f"{byte:03o}" for byte in data),  # od -b
    ]


@pytest.mark.parametrize("index", range(len(_encoded(TOKEN))))
def test_a_value_masked_once_is_masked_later_in_its_encodings(index: int) -> None:
    assert mask_text(f'token = "{TOKEN}"')[0] == f'token = "{MASK}"'
    encoded = _encoded(f"before {TOKEN} after")[index]
    masked, count = mask_text(encoded)
    assert count >= 1 and MASK in masked
    assert masked.count(MASK) <= 2  # the value, not the whole text


def test_pieces_of_a_known_value_are_masked_down_to_min_fragment_characters() -> None:
    secret_values.KNOWN.learn([TOKEN])
    body = TOKEN.removeprefix("ghp_")
    assert mask_text(f"body {body} end")[0] == f"body {MASK} end"
    assert mask_text(f"half {TOKEN[:20]}")[0] == f"half {MASK}"
    assert mask_text(f"{TOKEN[-12:]}!")[0] == f"{MASK}!"
    assert mask_text(f"short {TOKEN[5:16]} piece") == (f"short {TOKEN[5:16]} piece", 0)  # 11 characters


@pytest.mark.parametrize(
    ("value", "remembered"),
    [
        ("postgres", False),  # a word: masked by shape where it is assigned, not everywhere after
        ("changeme", False),
        ("aaaa1111", False),  # a repeated pattern
        ("12345678", False),
        ("hunter22", True),
        ("Tr0ub4dor", True),
        ("correct horse battery staple", True),  # a passphrase: long enough
    ],
)
def test_words_and_patterns_are_not_remembered(value: str, remembered: bool) -> None:
    assert secret_values.worth_remembering(value) is remembered


def test_secret_looking_variables_of_the_environment_are_known_from_the_start() -> None:
    environ = {
        "DEPLOY_TOKEN": "Ev8c1f0e2d9a7b6X34c5d6e7f8",
        "GITHUB_PAT_SECRET": "Pq7rS8tU9vW0xY1z",
        "PATH": "/usr/local/bin:/usr/bin",
        "SSH_AUTH_SOCK": "/tmp/ssh-agent.sock",  # a path, whatever the name says
        "AUTH_URL": "https://login.example.com/authorize",
        "GIT_AUTHOR_NAME": "Jane Q. Developer",
    }
    known = secret_values.KnownSecrets(environ=environ)
    text = " ".join(environ.values())
    shown = "".join(text[a:b] for a, b in sorted(known.spans(text)))
    assert shown == "Ev8c1f0e2d9a7b6X34c5d6e7f8Pq7rS8tU9vW0xY1z"


def test_the_registry_is_bounded_and_keeps_the_environment() -> None:
    known = secret_values.KnownSecrets(environ={"API_KEY": "Kq3wE5rT7yU9iO1p"})
    values = [secrets.token_hex(24) for _ in range(1000)]
    known.learn(values)
    assert known.spans("key Kq3wE5rT7yU9iO1p")  # the environment's values are kept
    assert sum(map(len, known._pieces)) <= secret_values.MAX_CHARS
    assert known.spans(values[-1]) and not known.spans(values[0])  # the least recently seen are forgotten


def test_the_projects_own_code_has_nothing_to_mask_with_many_known_values() -> None:
    """False positives: 200 random tokens known, and nothing of the project's code or docs is masked."""
    secret_values.KNOWN.learn(secrets.token_urlsafe(30) for _ in range(200))
    files = [*REPO.glob("servers/**/*.py"), *REPO.glob("shared/**/*.py"), REPO / "README.md"]
    text = "\n".join(path.read_text(errors="replace") for path in files)
    assert secret_values.KNOWN.spans(text) == []
