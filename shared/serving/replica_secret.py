"""The secret every replica of a team holds, and the keys each use derives from it.

What a replica hands a client and another replica must trust rests on it: the sealed `requestState` of a 2026-07-28
multi-round call (an approval question asked by one replica, its answer carried to whichever replica the balancer
picks next: `shared.serving.server.seal_request_state`), the status page's sign-in cookies and CSRF tokens
(`servers/gateway/status_sessions.py`). Where it comes from, the first that applies:

1. `MCP_SECTIONS_REQUEST_STATE_KEY_FILE`: a file of secrets, one a line, each at least 32 characters (`python -c
   "import secrets; print(secrets.token_urlsafe(32))"`; blank lines and `#` comments are skipped). Read like the other
   secret files (`--auth-token-file`, `MCP_SECTIONS_REDIS_PASSWORD_FILE`): a compose secret, readable by the server's
   user; refused when other users may write it. The first line seals and signs, every line still opens and verifies:
   to rotate without a failed call, roll out `new` as a second line (`old`, `new`), then as the first (`new`, `old`),
   then alone once the old cookies' 12 hours (and a state's 10 minutes) are over.
2. Shared state configured (`MCP_SECTIONS_REDIS_URL`): the key `<prefix>:secret:replicas`, made by the first replica
   that starts (an atomic get-or-create: `shared.store.redis_state.shared_secret`) and read by every replica at start.
   Lost (Redis emptied without its append-only file), the replicas started before disagree with those started after:
   restart them all.
3. Neither: made at start and held by this process alone (one person's gateway, stdio: nothing to share).

Each use derives its own key from each secret (HMAC-SHA256 of the secret and the use's name), so the secret is never
itself a key, and a value signed for one use is no token of another.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from mcp_sections.shared.ground.errors import ConfigError
from mcp_sections.shared.settings.config import LayeredSettings
from mcp_sections.shared.store.redis_state import shared_secret, shared_state

MIN_SECRET_CHARS = 32  # what the SDK asks of a request-state key
MAX_SECRETS = 8
REDIS_NAME = "replicas"


class ReplicaSecretSettings(LayeredSettings):
    """`MCP_SECTIONS_REQUEST_STATE_KEY_FILE` (see the module docstring)."""

    env_prefix: ClassVar[str] = "MCP_SECTIONS_"

    request_state_key_file: Path | None = Field(
        default=None, description="A file of the secrets every replica shares, one a line (the first signs)."
    )


@dataclass(frozen=True)
class ReplicaSecret:
    """The ring of secrets (the first signs, every one verifies) and where it came from."""

    ring: tuple[bytes, ...]
    source: str  # for the log: "the key file …", "the shared state", "this process"

    @property
    def shared(self) -> bool:
        return self.source != LOCAL

    def keys(self, use: str) -> list[bytes]:
        """The keys of `use` (`request-state`, `status-session`, …), one per secret, the signing one first."""
        return [hmac.new(secret, f"mcp-sections/{use}/v1".encode(), hashlib.sha256).digest() for secret in self.ring]

    def sign(self, use: str, data: bytes) -> str:
        """The MAC of `data` for `use` under the first secret (base64url, unpadded)."""
        return _mac(self.keys(use)[0], data)

    def verify(self, use: str, data: bytes, mac: str) -> bool:
        """Whether `mac` is `data`'s MAC for `use` under any secret of the ring (constant-time)."""
        found = False
        for key in self.keys(use):
            found |= hmac.compare_digest(_mac(key, data).encode(), mac.encode())
        return found


LOCAL = "this process"


def _mac(key: bytes, data: bytes) -> str:
    return base64.urlsafe_b64encode(hmac.new(key, data, hashlib.sha256).digest()).decode().rstrip("=")


def process_secret() -> ReplicaSecret:
    """A secret of this process alone (no replica to share it with)."""
    return ReplicaSecret((secrets.token_bytes(32),), LOCAL)


_resolved: dict[tuple[object, ...], ReplicaSecret] = {}


def replica_secret() -> ReplicaSecret:
    """The secret of this server (see the module docstring), resolved once per process and configuration."""
    key_file = ReplicaSecretSettings.load().request_state_key_file
    shared = shared_state() if key_file is None else None
    where = (key_file, shared.redis_url, shared.redis_prefix) if shared is not None else (key_file,)
    found = _resolved.get(where)
    if found is None:
        if key_file is not None:
            found = ReplicaSecret(read_key_file(key_file), f"the key file {key_file}")
        elif shared is not None:
            found = ReplicaSecret((shared_secret(shared, REDIS_NAME).encode(),), "the shared state (Redis)")
        else:
            found = process_secret()
        _resolved[where] = found
    return found


def read_key_file(path: Path) -> tuple[bytes, ...]:
    """The secrets of a key file, in order (see the module docstring); ConfigError saying what to fix."""
    what = f"the request-state key file {path} (MCP_SECTIONS_REQUEST_STATE_KEY_FILE)"
    try:
        mode = os.stat(path).st_mode
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {what}: {exc.strerror or exc}") from None
    if mode & 0o022:
        raise ConfigError(f"{what} is writable by other users (mode {stat.S_IMODE(mode):o}); run `chmod go-w {path}`")
    lines = [line.strip() for line in text.splitlines()]
    ring = [line for line in lines if line and not line.startswith("#")]
    make = 'python -c "import secrets; print(secrets.token_urlsafe(32))"'
    if not ring:
        raise ConfigError(f"{what} holds no secret: write one of at least {MIN_SECRET_CHARS} characters ({make})")
    if len(ring) > MAX_SECRETS:
        raise ConfigError(f"{what} holds {len(ring)} secrets; keep at most {MAX_SECRETS} (the newest first)")
    for number, line in enumerate(ring, 1):
        if len(line) < MIN_SECRET_CHARS:
            raise ConfigError(
                f"secret {number} of {what} is shorter than {MIN_SECRET_CHARS} characters: make one with {make}"
            )
    if len(set(ring)) != len(ring):
        raise ConfigError(f"{what} names one secret twice: keep each once")
    return tuple(line.encode("utf-8") for line in ring)
