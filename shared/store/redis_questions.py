"""Approval questions every gateway replica of a team shows: the Redis side of `shared.serving.question_board`.

A question waits in the replica whose call asked it; the status page of any replica lists it and takes its answer.
Layout (`P` the prefix of `shared.store.redis_state`): `P:question:<id>` a hash — `fields`, the question as JSON,
then `outcome` and `answered_by` once it is answered — and `P:questions`, the ids by when they were asked.

An answer, given on any replica, is one atomic claim (a Lua script): only the first is taken, only while the question
is open, and only for its user; the asking replica's withdrawal (its client is gone) is a claim too, and the end of
its wait (answered, timed out, given up) takes the question out in one step with any answer claimed before, so
whichever comes first wins everywhere. That replica reads every `POLL_SECONDS` whether its question was answered,
and writes it again every `HEARTBEAT_SECONDS` (its heartbeat: it expires `HEARTBEAT_TTL_SECONDS` after the last one,
so the questions of a replica that died leave every page; an answer to one in the seconds before reaches nobody).

Synchronous, with short time-outs and no retries: the page calls the board in its event loop (listing and
answering), so a Redis that does not answer must cost a page little; after a failure Redis is left alone for
`PAUSE_SECONDS` (the page shows this replica's questions only, meanwhile).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any, Literal

from mcp_sections.shared.store.redis_state import HEARTBEAT_TTL_SECONDS, SharedStateSettings, _missing

logger = logging.getLogger("mcp_sections.store.redis")

POLL_SECONDS = 0.25  # how often the asking replica looks for an answer to its question
PAUSE_SECONDS = 2.0  # Redis is left alone this long after it failed to answer
Claim = Literal["claimed", "answered", "gone"]

#: Write the question's fields and renew its lifetime (and the index's); its outcome and who gave it, if answered.
#: KEYS: the question, the index. ARGV: fields (JSON), lifetime (ms), question id, when it was asked (score).
RENEW = """
redis.call('HSET', KEYS[1], 'fields', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
return redis.call('HMGET', KEYS[1], 'outcome', 'answered_by')
"""

#: The first answer to an open question: {'claimed', fields}, else {'answered'} (it was, first) or {'gone'} (no such
#: open question, or another user's). KEYS: the question. ARGV: outcome, who answered, the answering user ('': any).
CLAIM = """
local fields = redis.call('HGET', KEYS[1], 'fields')
if not fields then return {'gone'} end
if redis.call('HEXISTS', KEYS[1], 'outcome') == 1 then return {'answered'} end
if ARGV[3] ~= '' then
  local owner = cjson.decode(fields)['owner']
  if type(owner) == 'string' and owner ~= ARGV[3] then return {'gone'} end
end
redis.call('HSET', KEYS[1], 'outcome', ARGV[1], 'answered_by', ARGV[2])
return {'claimed', fields}
"""

#: The question leaves Redis; the answer it had (nil when none). KEYS: the question, the index. ARGV: its id.
CLOSE = """
local answer = redis.call('HMGET', KEYS[1], 'outcome', 'answered_by')
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return answer
"""


class Unreachable(Exception):
    """Redis did not answer, or failed (or did a moment ago: it is left alone for `PAUSE_SECONDS`)."""


class RedisQuestions:
    """The approval questions of every replica (fields as plain JSON; the board makes them questions)."""

    def __init__(self, settings: SharedStateSettings) -> None:
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ModuleNotFoundError as exc:
            raise _missing() from exc
        options = settings.client_options(Retry) | {
            "retry": Retry(NoBackoff(), 0),
            "socket_timeout": 1.0,
            "socket_connect_timeout": 0.5,
        }
        self._client = redis.Redis.from_url(settings.redis_url or "", decode_responses=True, **options)
        self._error: type[Exception] = redis.RedisError
        self._renew = self._client.register_script(RENEW)
        self._claim = self._client.register_script(CLAIM)
        self._close = self._client.register_script(CLOSE)
        self._index = f"{settings.redis_prefix}:questions"
        self._prefix = f"{settings.redis_prefix}:question:"
        self._paused_until = 0.0

    def _run(self, command: Any, *args: Any, **options: Any) -> Any:
        if time.monotonic() < self._paused_until:
            raise Unreachable("Redis failed to answer a moment ago")
        try:
            return command(*args, **options)
        except self._error as exc:
            self._paused_until = time.monotonic() + PAUSE_SECONDS
            logger.warning("the shared approval questions cannot be reached (%s); this replica's only, meanwhile", exc)
            raise Unreachable(str(exc)) from exc

    def renew(self, fields: dict[str, Any]) -> tuple[str, str] | None:
        """Write (or write again) a question of this replica; its outcome and who gave it once it was answered."""
        keys = [self._prefix + fields["id"], self._index]
        args = [json.dumps(fields), round(HEARTBEAT_TTL_SECONDS * 1000), fields["id"], fields["asked_wall"]]
        outcome, who = self._run(self._renew, keys=keys, args=args)
        return (outcome, who or "") if outcome else None

    def answer_of(self, question_id: str) -> tuple[str, str] | None:
        """The outcome of a question of this replica and who gave it, once it was answered (None: not yet)."""
        outcome, who = self._run(self._client.hmget, self._prefix + question_id, "outcome", "answered_by")
        return (outcome, who or "") if outcome else None

    def claim(self, question_id: str, outcome: str, who: str, viewer: str | None) -> tuple[Claim, dict[str, Any]]:
        """The first answer to an open question (`viewer`: the answering user, None: anyone's question): "claimed"
        and its fields, "answered" (another answer came first) or "gone" (not open, or another user's)."""
        found = self._run(self._claim, keys=[self._prefix + question_id], args=[outcome, who, viewer or ""])
        return found[0], json.loads(found[1]) if len(found) > 1 else {}

    def close(self, question_id: str) -> tuple[str, str] | None:
        """The question leaves every page; the answer it had been given (None: none)."""
        outcome, who = self._run(self._close, keys=[self._prefix + question_id, self._index], args=[question_id])
        return (outcome, who or "") if outcome else None

    def open(self) -> list[dict[str, Any]]:
        """The fields of every replica's questions still waiting, oldest first (ids of vanished ones are dropped)."""
        ids = self._run(self._client.zrange, self._index, 0, -1)
        if not ids:
            return []
        with self._client.pipeline(transaction=False) as pipe:
            for question_id in ids:
                pipe.hmget(self._prefix + question_id, "fields", "outcome")
            stored = self._run(pipe.execute)
        gone = [question_id for question_id, (fields, _) in zip(ids, stored, strict=True) if fields is None]
        if gone:
            self._run(self._client.zrem, self._index, *gone)
        return [json.loads(fields) for fields, outcome in stored if fields is not None and outcome is None]
