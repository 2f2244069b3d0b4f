"""Secret values masked in what tools return: tokens, keys and passwords become `***MASKED***`.

The path guard keeps protected files (`.env`, keys) from being read by name, but the same values come back
through other doors: `git log -p` of a committed `.env`, `git grep`, a config file that holds a password, a
search hit. Sections that show file contents (file_ops, shell_ops, rag_ops) mask every result with this module.

Detectors, in order:
- detect-secrets' pattern plugins (AWS, GitHub, GitLab, Slack, Stripe, OpenAI, PyPI, npm, JWT, private keys,
  basic-auth URLs...): a maintained rule set, not ours. Its entropy plugins are left out: they flag every git
  hash. Its public-IP plugin too: an address is not a secret.
- detect-secrets' keyword detector on lines that name a secret (`password = "..."`, quoted values).

Both come from `shared/confinement/secrets/patterns.py`, generated from the installed detect-secrets by
scripts/generate_secret_patterns.py and checked against it by the tests: importing detect-secrets itself costs
~0.2 s, which every masking section's first result would pay.
- environment assignments with a secret-sounding upper-case name (`API_KEY=...`, `export DB_PASSWORD=...`,
  `+GITHUB_TOKEN="..."` in a diff), which the keyword detector leaves alone in `.env` files.
- config lines in any case whose name says secret and whose unquoted value looks like one
  (`aws_secret_access_key = wJalr...` in `~/.aws/credentials`, `password: s3cr3t-2024` in YAML).
- private key blocks: everything from `-----BEGIN ... PRIVATE KEY-----` to its END line.

A pattern runs only on text holding the words it cannot match without (`NEEDS`), so most output costs a few
substring searches.

Masking by shape is beaten by any re-encoding (`base64`, `jq explode`, `grep -o .`, `rev`...). So every value
masked here is also remembered, with the values of the deny-listed files and of the server's secret-looking
environment variables, and every later output is searched for them in their common encodings and in part
(shared/confinement/secrets/values.py: masking by value, best effort). The guarantee for the deny-listed files is that
sandboxed programs cannot read them (shared/confinement/secrets/files.py).
Masking is display only: writers refuse content holding the mask, so a masked value is never written back
over the real one (`contains_mask`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mcp_types import CallToolResult, TextContent

from mcp_sections.shared.confinement.secrets import patterns as secret_patterns
from mcp_sections.shared.confinement.secrets import values as secret_values

MASK = "***MASKED***"
_MIN_GROUP = 6
_ENV_ASSIGNMENT = re.compile(
    # after grep's `file:line:`, a diff's `+`/`-`, word-diff's `{+`/`[-`, `export`:
    r"^(?P<lead>(?:[^\s:=]+[:-]){0,3}[ \t]*(?:[+\- ]|\{\+|\[-)?[ \t]*(?:export[ \t]+)?"
    r"(?=[A-Z])[A-Z0-9_]*(?:KEY|PASSWORD|PASSWD|PWD|SECRET|TOKEN|CREDENTIALS?|PASSPHRASE)[A-Z0-9_]*[ \t]*=[ \t]*)"
    # unquoted: not code (`KEYS = ("a", "b")`, `API_KEY = os.environ.get("X")`): no parenthesis, which a shell
    # would refuse
    r"(?P<value>\"[^\"\n]{3,}\"|'[^'\n]{3,}'|(?![^\s#]*[()])[^\s\"'#$\[][^\s#]{2,})",
    re.MULTILINE,
)
#: An unquoted value in a config file's `name = value` / `name: value` line whose name says secret in any case
#: (`aws_secret_access_key = wJalr…` in ~/.aws/credentials, `password: s3cr3t-2024` in YAML), which the keyword
#: detector's quoted patterns and the upper-case rule above leave alone. The value must look like a secret, not code:
#: one token of 8 or more key characters holding a letter and a digit, the rest of the line at most a comment; a
#: dotted name (`settings.SECRET_KEY`), a path (`/run/secrets/db_password`), a call or an expression does not
#: match.
_CONFIG_ASSIGNMENT = re.compile(
    r"(?P<lead>(?:[^\s:=]+[:-]){0,3}[ \t]*[+\- ]?[ \t]*"
    r"[A-Za-z0-9_.\-]*(?i:secret|password|passwd|passphrase|token|api_?key|access_?key|private_?key|credential)"
    r"[A-Za-z0-9_.\-]*[ \t]*[:=][ \t]*)"
    r"(?P<value>(?![/.~])(?=[^\s]*[0-9])(?=[^\s]*[A-Za-z])[A-Za-z0-9/+=_\-~.]{8,})[ \t]*(?:[#;].*)?$",
)
_DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_PRIVATE_KEY_BLOCK = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)


_KEYWORDISH = ("key", "pw", "pass", "tok", "secret")
DENYLIST_WORDS = ("key", "pass", "pwd", "secret", "contrase")  # every keyword of the denylist holds one of these
_KEYWORD_LEAD = 9  # the most characters before key/pass/pwd/secret/contrase in a denylist keyword ("database_pass")
#: Words a plugin's patterns cannot match without (all groups needed, any word of a group), so a text is only
#: searched with the patterns that could match it; lower-case words are looked up ignoring case, others exactly.
#: A plugin not listed is always run.
NEEDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "ArtifactoryDetector": (("AKC", "AP"),),
    "TwilioKeyDetector": (("AC", "SK"),),
    "AWSKeyDetector": (("a3t", "abia", "acca", "akia", "asia", "aws"),),
    "AzureStorageKeyDetector": (("accountkey=",),),
    "BasicAuthDetector": (("://",), ("@",)),
    # cl, clou or cloudant, then a separator, `api`, key/pw(d)/pass(word)/token; or a cloudant.com URL
    "CloudantDetector": (("clou", "cl_", "cl-", "clapi", "clkey", "clpw", "clpass", "cltoken"),),
    "GitHubTokenDetector": (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),),
    "GitLabTokenDetector": (
        # the token prefixes (not "gl": every "glob" holds it), and GitLab's runner registration token
        (
            "GR1348941",
            *("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "glcbt-", "glimt-", "glptt-", "glagent-", "gloas-"),
        ),
    ),
    "IbmCloudIamDetector": (_KEYWORDISH,),  # its ibm/cloud/iam prefix is optional
    "IbmCosHmacDetector": (("secret",), ("key",)),
    "JwtTokenDetector": (("eyj",),),
    "MailchimpDetector": (("-us",),),
    "NpmDetector": (("_authtoken",),),
    "OpenAIDetector": (("t3blbkfj",),),
    "PrivateKeyDetector": (("private key", "putty"),),
    "PypiTokenDetector": (("pypi-",),),
    "SendGridDetector": (("sg.",),),
    "SlackDetector": (("xox", "hooks.slack.com"),),
    "SoftlayerDetector": (("softlayer", "sl"), (*_KEYWORDISH, "softlayer")),  # a keyword, or its API URL
    "SquareOAuthDetector": (("sq0csp-",),),
    "StripeDetector": (("k_live_",),),
    "TelegramBotTokenDetector": ((":",),),
}


@functools.cache
def _compiled(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """A detector compiled the first time a text could match it: compiling all of them costs ~8 ms, which a
    section's first result would pay although most texts pass no detector's word check."""
    return re.compile(pattern, flags)


@dataclass(frozen=True)
class _Rules:
    patterns: tuple[tuple[str, int, Gates], ...]
    keyword_starts: str
    keyword_patterns: tuple[tuple[str, int, int, bool], ...]

    def keyword_values(self, line: str) -> list[str]:
        """Every value detect-secrets' keyword detector matches on a line of unknown file type (quoted values).

        detect-secrets reports the first match of each pattern; here every match counts, or the second
        `password = "..."` of a one-line JSON document would pass. A pattern that begins with the keyword can
        only match where a keyword starts, so it is tried there alone: a 16 KB line costs 0.5 ms, not 10."""
        starts = self.keyword_start_positions(line)
        found = []
        for source, flags, group, anchored in self.keyword_patterns:
            pattern = _compiled(source, flags)
            matches = (pattern.match(line, start) for start in starts) if anchored else pattern.finditer(line)
            for match in matches:
                if match and (value := match.group(group)) and _plausible(value):
                    found.append(value)
        return found

    def keyword_start_positions(self, line: str) -> list[int]:
        """Where a denylist keyword starts: each keyword holds one of `DENYLIST_WORDS`, at most
        `_KEYWORD_LEAD` characters in, so only those few places are tried (scanning every position of a long
        line with the keyword alternation is what made masking slow)."""
        lowered = line.lower()
        candidates: set[int] = set()
        for word in DENYLIST_WORDS:
            found = lowered.find(word)
            while found != -1:
                candidates.update(range(max(0, found - _KEYWORD_LEAD), found + 1))
                found = lowered.find(word, found + 1)
        keyword_starts = _compiled(self.keyword_starts, re.IGNORECASE)
        return [start for start in sorted(candidates) if keyword_starts.match(line, start)]


@functools.cache
def _rules() -> _Rules:
    """The detectors: detect-secrets' patterns from shared/confinement/secrets/patterns.py, each compiled when first
    needed."""
    patterns = tuple(
        (pattern, flags, word_gates(NEEDS.get(plugin, ()))) for plugin, pattern, flags in secret_patterns.PATTERNS
    )
    keywords = "(" + "|".join(secret_patterns.KEYWORD_DENYLIST) + ")"
    keyword = tuple(
        (pattern, flags, group, pattern.startswith(keywords))
        for pattern, flags, group in secret_patterns.KEYWORD_PATTERNS
    )
    return _Rules(patterns, keywords, keyword)


_NOT_A_SECRET = re.compile(
    r"[A-Z][A-Z0-9_]*"  # the NAME of an environment variable (`api_key_env = "OPENAI_API_KEY"`)
    r"|https?://[^@\s]*"  # an address without credentials (`TIKTOKEN_URL = "https://..."`)
)


def _plausible(value: str) -> bool:
    """Not a template, a variable reference, a placeholder (`${PASSWORD}`, `<your key>`, `%s`), the name of a
    variable or a plain address."""
    return len(value) >= 3 and value[0] not in "$<{%" and MASK not in value and not _NOT_A_SECRET.fullmatch(value)


def mask_text(text: str) -> tuple[str, int]:
    """`text` with every secret value replaced by MASK, and how many were masked: what the detectors find (its
    values are remembered), and every value known to be secret, in any of its encodings (`secret_values`)."""
    spans = shape_spans(text)
    if spans:
        secret_values.KNOWN.learn(_values(text, spans))
    return _apply(text, spans + secret_values.KNOWN.spans(text))


def mask_ends(text: str, start: int, end: int) -> str:
    """`text[start:end]` with what crosses its ends masked, as if the whole `text` were masked: the secrets the
    detectors find on a line that either end cuts, a private key block that crosses one, and the known values
    anywhere in `text` (cheap), clipped to the part. What lies wholly inside the part is masked with the result it
    goes into (`mask_result`), so a window of a longer output (shell_ops' read_process_output) is masked as part of
    the stream for the cost of its edges."""
    spans: list[tuple[int, int]] = []
    for edge in {start, end}:
        first, last = text.rfind("\n", 0, edge) + 1, text.find("\n", edge)
        last = len(text) if last == -1 else last
        if first < edge < last:  # a line cut in two
            found = shape_spans(text[first:last])
            if found:
                secret_values.KNOWN.learn(_values(text[first:last], found))
            spans += [(at + first, until + first) for at, until in found]
    if "PRIVATE KEY" in text:
        spans += [match.span() for match in _PRIVATE_KEY_BLOCK.finditer(text)]
    spans += secret_values.KNOWN.spans(text)
    inside = [
        (max(first, start) - start, min(last, end) - start) for first, last in spans if first < end and last > start
    ]
    return _apply(text[start:end], inside)[0]


def secret_values_in(text: str) -> list[str]:
    """The values the detectors find in `text` (a private key block as its body): what the file scan learns from
    a deny-listed file (shared/confinement/secrets/files.py)."""
    return _values(text, shape_spans(text))


def _values(text: str, spans: list[tuple[int, int]]) -> list[str]:
    """The values behind masked spans: a key block's body, never the header line the private-key detector
    matches (no secret: remembering it would mask every mention of a key type)."""
    values = [text[start:end] for start, end in spans]
    values = [key_body(value) if value.startswith("-----BEGIN") else value for value in values]
    return [value for value in values if "PRIVATE KEY" not in value and not value.startswith("PuTTY")]


def key_body(block: str) -> str:
    """A private key block's base64 body, without its BEGIN/END lines and `Proc-Type:`-style headers, and without
    its first line when there are more: that one is the same in every key of a kind (the OpenSSH or PKCS#8
    header), and remembering it would mask the start of every other key and certificate."""
    lines = [line.strip() for line in block.splitlines()]
    body = [line for line in lines if line and not line.startswith("-----") and ":" not in line]
    return "".join(body[1:] if len(body) > 2 else body)


def shape_spans(text: str) -> list[tuple[int, int]]:
    """Where the detectors find secret values in `text` (masking by shape)."""
    rules = _rules()
    lowered = text.lower()
    spans: list[tuple[int, int]] = []
    if "private key" in lowered:
        spans += [match.span() for match in _PRIVATE_KEY_BLOCK.finditer(text)]
    for source, flags, needs in rules.patterns:
        if could_match(needs, text, lowered):
            spans += [_secret_span(match) for match in _compiled(source, flags).finditer(text)]
    if "=" in text:
        spans += _assignment_spans(text)
    if "=" in text or ":" in text:
        spans += _config_spans(text, lowered)
    if any(word in lowered for word in DENYLIST_WORDS):
        spans += _keyword_spans(text, rules)
    return spans


def _assignment_spans(text: str) -> list[tuple[int, int]]:
    """The plausible secret values of `NAME=value` assignments (without their quotes)."""
    spans = []
    for match in _ENV_ASSIGNMENT.finditer(text):
        value_start, value_end = match.span("value")
        quoted = text[value_start] in "\"'"
        if _plausible(text[value_start + quoted : value_end - quoted]):
            spans.append((value_start + quoted, value_end - quoted))
    return spans


def _config_spans(text: str, lowered: str) -> list[tuple[int, int]]:
    """The secret-looking unquoted values of config lines whose name says secret (`_CONFIG_ASSIGNMENT`), looked for
    on the lines that hold one of its words only."""
    words = ("secret", "pass", "token", "key", "credential")
    if not any(word in lowered for word in words):
        return []
    spans = []
    offset = 0
    for line in text.splitlines(keepends=True):
        if any(word in line.lower() for word in words):
            match = _CONFIG_ASSIGNMENT.match(text, offset, offset + len(line.rstrip("\r\n")))
            if match and _plausible(match["value"]) and not _DOTTED_NAME.fullmatch(match["value"]):
                spans.append(match.span("value"))
        offset += len(line)
    return spans


def _keyword_spans(text: str, rules: _Rules) -> list[tuple[int, int]]:
    """Every place of the values the keyword detector finds on the lines that hold a deny-listed word."""
    spans = []
    offset = 0
    for line in text.splitlines(keepends=True):
        if any(word in line.lower() for word in DENYLIST_WORDS):
            for value in rules.keyword_values(line):
                start = line.find(value)
                while start != -1:
                    spans.append((offset + start, offset + start + len(value)))
                    start = line.find(value, start + len(value))
        offset += len(line)
    return spans


Gates = tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]


def word_gates(needs: tuple[tuple[str, ...], ...]) -> Gates:
    """`NEEDS` groups split once into (words looked up ignoring case, words looked up exactly)."""
    return tuple(
        (tuple(word for word in group if word.islower()), tuple(word for word in group if not word.islower()))
        for group in needs
    )


def could_match(gates: Gates, text: str, lowered: str) -> bool:
    """Whether `text` holds a word of every group a detector cannot match without (see `NEEDS`)."""
    for ignoring_case, exact in gates:  # map over the bound __contains__: no Python frame per word
        if not (any(map(lowered.__contains__, ignoring_case)) or any(map(text.__contains__, exact))):
            return False
    return True


def _secret_span(match: re.Match[str]) -> tuple[int, int]:
    """The secret inside a detector's match: its longest group when the pattern captures the value (a password
    in a URL, a key after `aws_secret =`), else the whole match."""
    groups = [(match.end(index) - match.start(index), index) for index in range(1, (match.re.groups or 0) + 1)]
    groups = [(length, index) for length, index in groups if match.start(index) != -1]
    if groups:
        length, index = max(groups)
        if length >= _MIN_GROUP:
            return match.span(index)
    return match.span()


def _apply(text: str, spans: list[tuple[int, int]]) -> tuple[str, int]:
    merged: list[list[int]] = []
    for start, end in sorted(span for span in spans if span[1] > span[0]):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    if not merged:
        return text, 0
    pieces, position = [], 0
    for start, end in merged:
        pieces += [text[position:start], MASK]
        position = end
    pieces.append(text[position:])
    return "".join(pieces), len(merged)


def mask_value(value: Any) -> tuple[Any, int]:
    """A JSON value with every string masked (mask_text), and the count."""
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, list):
        items = [mask_value(item) for item in value]
        return [item for item, _ in items], sum(count for _, count in items)
    if isinstance(value, dict):
        pairs = {key: mask_value(item) for key, item in value.items()}
        return {key: item for key, (item, _) in pairs.items()}, sum(count for _, count in pairs.values())
    return value, 0


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def mask_json_or_text(text: str) -> str:
    """`text` masked; a JSON document is masked string by string, since inside it a quoted value reads `\\"...\\"`,
    which the keyword detector does not take for quotes."""
    if text[:1] in ("{", "["):
        try:
            document = json.loads(text)
        except ValueError:
            pass
        else:
            if not mask_text("\n".join(_strings(document)))[1]:  # one scan decides whether to walk
                return text
            masked, _ = mask_value(document)
            return json.dumps(masked, ensure_ascii=False, separators=(",", ":"))
    return mask_text(text)[0]


def mask_result(result: CallToolResult) -> CallToolResult:
    """A tool result (a failure too: its message may quote output) with secret values masked in its text and
    structured content; images untouched."""
    content = [
        block.model_copy(update={"text": mask_json_or_text(block.text)}) if isinstance(block, TextContent) else block
        for block in result.content
    ]
    structured = result.structured_content
    if structured and mask_text("\n".join(_strings(structured)))[1]:  # one scan decides whether to walk
        structured, _ = mask_value(structured)
    return result.model_copy(update={"content": content, "structured_content": structured})


def contains_mask(text: str) -> bool:
    """Whether text holds a masked value (writing it would replace the real secret with the mask)."""
    return MASK in text
