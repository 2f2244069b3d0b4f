"""What the gateway replicas of a team share on Redis: MCP tasks and the bytes and owners of result links.

Why Redis (and not PostgreSQL, which the team's memory and todo use): this state is small, short-lived and hot — a
task is written at every progress report and read at every poll, a link's bytes live an hour — so it wants an
in-memory store with per-key expiry (a task or link is forgotten by Redis itself, `PX`), atomic compare-and-set
(a Lua script: a task that ended stays ended whoever writes after) and publish/subscribe (a cancel reaches the
replica running the work at once). It is what the peers use for the same state (ToolHive's sessions, ContextForge's
cache); PostgreSQL would need polling and a sweeper for each of these. What must survive a restart of Redis is
kept by its append-only file (`--appendonly yes`, the team profile's setting).

Configured by `MCP_SECTIONS_REDIS_URL` (`redis://host:6379/0`, `rediss://` for TLS), its password in the file
`MCP_SECTIONS_REDIS_PASSWORD_FILE` names (a compose secret), keys under `MCP_SECTIONS_REDIS_PREFIX` (default
`mcp-sections`); the built-in sections a gateway starts inherit them, so the links they mint are readable from
every replica. Unset: everything stays in the process, as for one person.

Layout (`P` the prefix): `P:task:<id>` the task's fields as JSON, `P:owner:<owner>` a sorted set of its task ids,
`P:replica:<id>` a replica's heartbeat (a key that expires unless renewed), `P:cancel` the channel of cancelled task
ids, `P:link:<uri>` a link's description and bytes, `P:link-owner:<server>:<uri>` the client a server (`gateway`, a
section id) gave it to, `P:secret:<name>` a secret every replica reads (`shared_secret`: created once by the first
replica to ask, never expiring).

Both clients reconnect: a command that finds the connection gone is retried with a growing pause for about
`RETRY_SECONDS` (a restart of Redis costs a wait, not an error), the subscription is opened again.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from mcp_sections.shared.ground.errors import ConfigError
from mcp_sections.shared.ground.install_hints import install_hint
from mcp_sections.shared.settings.config import LayeredSettings

logger = logging.getLogger("mcp_sections.store.redis")

RETRIES = 30  # with the back-off below: about RETRY_SECONDS of retries before a command fails
RETRY_SECONDS = 15.0
HEARTBEAT_SECONDS = 2.0  # a replica renews its heartbeat this often...
HEARTBEAT_TTL_SECONDS = 8.0  # ... and is taken for dead once it has not for this long
TERMINAL = ("completed", "failed", "cancelled")

#: Write a task's fields unless it has already ended (then return what is stored); index it under its owner.
#: KEYS: the task, its owner's set. ARGV: fields (JSON), key lifetime (ms), task id, creation time, owner set lifetime.
PUT_TASK = """
local current = redis.call('GET', KEYS[1])
if current then
  local status = cjson.decode(current)['status']
  if status == 'completed' or status == 'failed' or status == 'cancelled' then return current end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[5]) then redis.call('PEXPIRE', KEYS[2], ARGV[5]) end
return false
"""

#: KEYS[1]'s value, set to ARGV[1] first if it has none: every replica reads the value the first one wrote.
GET_OR_SET = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX') then return ARGV[1] end
return redis.call('GET', KEYS[1])
"""


class SharedStateSettings(LayeredSettings):
    """`MCP_SECTIONS_REDIS_URL` and `MCP_SECTIONS_REDIS_PREFIX` (see the module docstring)."""

    env_prefix: ClassVar[str] = "MCP_SECTIONS_"

    redis_url: str | None = Field(default=None, max_length=2000, description="Redis the replicas share (team).")
    redis_prefix: str = Field(default="mcp-sections", pattern=r"^[A-Za-z0-9_.:-]{1,64}$")
    redis_password_file: Path | None = Field(default=None, description="A file holding Redis's password (a secret).")

    def client_options(self, retry: Callable[[Any, int], Any]) -> dict[str, Any]:
        """What both clients are opened with: `retry` (redis' or redis.asyncio's `Retry`) with its back-off,
        timeouts, and the password from its file."""
        from redis.backoff import ExponentialBackoff

        options: dict[str, Any] = {
            "retry": retry(ExponentialBackoff(cap=1.0, base=0.05), RETRIES),
            "socket_timeout": 10,
            "socket_connect_timeout": 3,
            "health_check_interval": 10,
        }
        if self.redis_password_file is not None:
            try:
                options["password"] = self.redis_password_file.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise ConfigError(f"redis_password_file {self.redis_password_file} cannot be read: {exc}") from exc
        return options


def shared_state() -> SharedStateSettings | None:
    """The Redis this process shares its tasks and links through (None: they stay in the process)."""
    settings = SharedStateSettings.load()
    return settings if settings.redis_url else None


def shared_secret(settings: SharedStateSettings, name: str) -> str:
    """The secret `P:secret:<name>` every replica reads at start: made (32 random bytes, hex) and stored by the first
    replica that asks, in one atomic step, so replicas starting together still agree; it never expires (Redis keeps
    it in its append-only file). ConfigError when Redis cannot be reached."""
    try:
        import redis
        from redis.retry import Retry
    except ModuleNotFoundError as exc:
        raise _missing() from exc
    client = redis.Redis.from_url(settings.redis_url or "", decode_responses=True, **settings.client_options(Retry))
    try:
        stored = client.register_script(GET_OR_SET)(
            keys=[f"{settings.redis_prefix}:secret:{name}"], args=[secrets.token_hex(32)]
        )
    except redis.RedisError as exc:
        raise ConfigError(
            f"the shared state (MCP_SECTIONS_REDIS_URL) cannot be reached to read the replicas' secret {name!r}: {exc}"
        ) from exc
    finally:
        client.close()
    return str(stored)


def _missing() -> ConfigError:
    return ConfigError(
        f"MCP_SECTIONS_REDIS_URL is set but the Python package redis is not installed; {install_hint('team')}."
    )


def new_replica_id() -> str:
    """A replica's name in the heartbeats: its host, process and a random part (a restarted replica is another)."""
    return f"{socket.gethostname()[:40]}-{os.getpid()}-{secrets.token_hex(4)}"


class RedisTasks:
    """The tasks of every replica (fields as plain JSON; `shared.serving.tasks` makes them tasks). Open it in the
    event loop that uses it (`connect`)."""

    def __init__(self, settings: SharedStateSettings, replica: str | None = None) -> None:
        self.settings = settings
        self.prefix = settings.redis_prefix
        self.replica = replica or new_replica_id()
        self._client: Any = None
        self._healthy_since: float | None = None  # when the heartbeats last became possible again

    def connect(self) -> None:
        try:
            import redis.asyncio as aioredis
            from redis.asyncio.retry import Retry
        except ModuleNotFoundError as exc:
            raise _missing() from exc
        options = self.settings.client_options(Retry)
        self._client = aioredis.Redis.from_url(self.settings.redis_url or "", decode_responses=True, **options)
        self._put = self._client.register_script(PUT_TASK)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _key(self, kind: str, name: str) -> str:
        return f"{self.prefix}:{kind}:{name}"

    # ---- tasks -------------------------------------------------------------------------------------------------
    async def put(self, fields: dict[str, Any], expires_at: float, keep_until: float) -> dict[str, Any] | None:
        """Write a task (its key kept until `expires_at`, its owner's index until `keep_until`), unless it has
        already ended: then the stored fields, unchanged, are returned."""
        now = time.time()
        stored = await self._put(
            keys=[self._key("task", fields["id"]), self._key("owner", fields["owner"])],
            args=[
                json.dumps(fields, separators=(",", ":")),
                max(1000, round((expires_at - now) * 1000)),
                fields["id"],
                fields["created"],
                max(1000, round((keep_until - now) * 1000)),
            ],
        )
        return json.loads(stored) if stored else None

    async def get(self, task_id: str) -> dict[str, Any] | None:
        stored = await self._client.get(self._key("task", task_id))
        return json.loads(stored) if stored else None

    async def owned(self, owner: str) -> list[dict[str, Any]]:
        """The owner's tasks still kept, oldest first (ids of forgotten ones are dropped from its index)."""
        index = self._key("owner", owner)
        ids = await self._client.zrange(index, 0, -1)
        if not ids:
            return []
        stored = await self._client.mget([self._key("task", task_id) for task_id in ids])
        gone = [task_id for task_id, fields in zip(ids, stored, strict=True) if fields is None]
        if gone:
            await self._client.zrem(index, *gone)
        return [json.loads(fields) for fields in stored if fields is not None]

    # ---- replicas and cancels ----------------------------------------------------------------------------------
    async def beat(self) -> None:
        """This replica is alive (renewed every `HEARTBEAT_SECONDS`)."""
        try:
            await self._client.set(self._key("replica", self.replica), "1", px=round(HEARTBEAT_TTL_SECONDS * 1000))
        except Exception:
            self._healthy_since = None
            raise
        if self._healthy_since is None:
            self._healthy_since = time.monotonic()

    async def gone(self, replica: str) -> bool:
        """Whether `replica` stopped (no heartbeat). Judged only once this replica has itself been connected for a
        heartbeat's lifetime: after an outage of Redis, the others need that long to announce themselves again."""
        if replica == self.replica:
            return False
        since = self._healthy_since
        if since is None or time.monotonic() - since < HEARTBEAT_TTL_SECONDS:
            return False
        return not await self._client.exists(self._key("replica", replica))

    async def cancel(self, task_id: str) -> None:
        """Tell the replica running `task_id` to stop its work."""
        await self._client.publish(self._key("cancel", "requests"), task_id)

    async def cancels(self, on_cancel: Callable[[str], None]) -> None:
        """Call `on_cancel(task id)` for each cancel any replica publishes, forever (subscribing again after a loss
        of the connection)."""
        import anyio

        pause = 0.1
        while True:
            pubsub = self._client.pubsub()
            try:
                await pubsub.subscribe(self._key("cancel", "requests"))
                pause = 0.1
                async for message in _messages(pubsub):
                    on_cancel(message)
            except Exception as exc:  # the connection is gone: subscribe again when Redis is back
                logger.info("the cancel subscription is lost (%s); subscribing again", exc)
                await anyio.sleep(pause)
                pause = min(pause * 2, 2.0)
            finally:
                try:
                    await pubsub.aclose()
                except Exception:
                    logger.debug("closing a lost subscription failed", exc_info=True)


async def _messages(pubsub: Any) -> AsyncIterator[str]:
    while True:
        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=5.0)
        if message is not None and message.get("type") == "message":
            yield str(message["data"])


class RedisLinks:
    """The bytes of result links and the client each was given to (`shared.framework.resources`), for every
    replica and section process. Synchronous: the callers are."""

    def __init__(self, settings: SharedStateSettings) -> None:
        try:
            import redis
            from redis.retry import Retry
        except ModuleNotFoundError as exc:
            raise _missing() from exc
        self._client = redis.Redis.from_url(settings.redis_url or "", **settings.client_options(Retry))
        self.prefix = settings.redis_prefix

    def _key(self, kind: str, uri: str) -> str:
        return f"{self.prefix}:{kind}:{uri}"

    def put(self, uri: str, meta: dict[str, Any], data: str | bytes, ttl_seconds: float) -> None:
        text = isinstance(data, str)
        body = data.encode("utf-8") if isinstance(data, str) else data
        fields: dict[str, str | bytes] = {"meta": json.dumps({**meta, "text": text}), "data": body}
        key = self._key("link", uri)
        with self._client.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping=fields)  # type: ignore[arg-type]
            pipe.pexpire(key, max(1, round(ttl_seconds * 1000)))
            pipe.execute()

    def get(self, uri: str) -> tuple[dict[str, Any], str | bytes] | None:
        stored: dict[bytes, bytes] = self._client.hgetall(self._key("link", uri))  # type: ignore[assignment]
        if not stored or b"meta" not in stored:
            return None
        meta = json.loads(stored[b"meta"])
        data = stored.get(b"data", b"")
        return meta, data.decode("utf-8") if meta.pop("text", False) else data

    def replace_text(self, uri: str, change: Callable[[str], str]) -> None:
        key = self._key("link", uri)
        found = self.get(uri)
        if found is None or not isinstance(found[1], str):
            return
        self._client.hset(key, "data", change(found[1]).encode("utf-8"))

    def record_owner(self, uri: str, owner: str, ttl_seconds: float, server: str) -> None:
        """The first client `server` (the gateway, a section) gives a link to keeps it there. Each server keeps its
        own record: a section's client is the gateway that started it, the gateway's is the person."""
        key = self._key("link-owner", f"{server}:{uri}")
        self._client.set(key, owner, nx=True, px=max(1, round(ttl_seconds * 1000)))

    def owner(self, uri: str, server: str) -> str | None:
        stored: bytes | None = self._client.get(self._key("link-owner", f"{server}:{uri}"))  # type: ignore[assignment]
        return stored.decode() if stored is not None else None
