"""Questions waiting on a page for the person to answer: approval where the MCP client cannot ask.

A client without elicitation (Claude Desktop) cannot put an approval question to its user. When the server that got
the call has a page the person can open (the gateway's status page, `servers/gateway/status.py`, over HTTP or beside
a stdio gateway), the question waits there instead: `ask` puts it on the board and waits; the page lists what is
`pending` and hands the signed-in person's answer to `answer`. A question nobody answers within `timeout_seconds` is
declined (the call does not run). At most `MAX_PENDING` wait at once; one more is refused at once.

A question outlives nobody: when the client that asked is gone (its connection closed and was not resumed, as
`shared.serving.approval` watches it), the page shows it disconnected (`disconnected_at`) and then the question is
withdrawn (`withdraw`): it leaves the page and is declined, so that approving it can never run a call for nobody.

On a team's gateway (OAuth users, `shared.framework.clients`) a question is its user's: only the user whose call
asked it sees it on the page and may answer it; the answer records who gave it.

Several replicas (a team, `MCP_SECTIONS_REDIS_URL`): a question also waits in the Redis they share
(`shared.store.redis_questions`), so the page of every replica lists it and takes its answer; the first answer,
wherever it was given, is the one the waiting call gets (an atomic claim), and a question leaves every page once its
replica stops renewing it (a replica that died). The call itself waits in the replica that asked. Unset (or when
Redis does not answer), the questions stay in this process, as for one person.

The board is only where questions wait; `shared.serving.approval` decides which calls need approval, words the
question, tells the client where to answer, and audits the answer.
"""

from __future__ import annotations

import secrets
import time
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import anyio
import anyio.to_thread

from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.store.redis_questions import POLL_SECONDS, Claim, RedisQuestions, Unreachable
from mcp_sections.shared.store.redis_state import HEARTBEAT_SECONDS, shared_state

MAX_PENDING = 32
Outcome = Literal["approve", "decline", "timeout", "withdrawn"]
ANSWERS = ("approve", "decline", "withdrawn")  # the outcomes a question may be given (a timeout is only noticed)


@dataclass(eq=False)
class PendingQuestion:
    """One question on the board: what would run, who asked, until when; the answer once given."""

    id: str
    tool: str
    message: str
    asker: str
    timeout_seconds: float
    owner: str | None = None  # the OAuth user whose call asked (`User.id`): only they see and answer it
    asked: float = field(default_factory=time.monotonic)
    asked_wall: float = field(default_factory=time.time)
    outcome: Outcome | None = None
    answered_by: str | None = None
    disconnected_at: float | None = None  # `time.monotonic()` since when the asking client has been gone (None: there)
    withdrawn_after: float | None = None  # seconds a gone client has to come back before its question is withdrawn
    done: anyio.Event = field(default_factory=anyio.Event)

    @property
    def seconds_left(self) -> float:
        return max(0.0, self.asked + self.timeout_seconds - time.monotonic())

    @property
    def withdrawn_in(self) -> float | None:
        """Seconds before the question is withdrawn because its client is gone (None: the client is there)."""
        if self.disconnected_at is None or self.withdrawn_after is None:
            return None
        return max(0.0, self.disconnected_at + self.withdrawn_after - time.monotonic())

    def shared_fields(self) -> dict[str, Any]:
        """What the other replicas' pages show of it (its times on the wall clock)."""
        gone = self.disconnected_at
        return {
            "id": self.id,
            "tool": self.tool,
            "message": self.message,
            "asker": self.asker,
            "timeout_seconds": self.timeout_seconds,
            "owner": self.owner,
            "asked_wall": self.asked_wall,
            "disconnected_wall": None if gone is None else time.time() - (time.monotonic() - gone),
            "withdrawn_after": self.withdrawn_after,
        }

    @classmethod
    def shared(cls, fields: dict[str, Any]) -> PendingQuestion:
        """Another replica's question (`shared_fields`), its times on this replica's clock."""
        now, wall = time.monotonic(), time.time()
        gone = fields.get("disconnected_wall")
        return cls(
            fields["id"],
            fields["tool"],
            fields["message"],
            fields["asker"],
            fields["timeout_seconds"],
            fields.get("owner"),
            asked=now - (wall - fields["asked_wall"]),
            asked_wall=fields["asked_wall"],
            disconnected_at=None if gone is None else now - (wall - gone),
            withdrawn_after=fields.get("withdrawn_after"),
        )


class QuestionBoard:
    """This server's questions waiting for the person (see the module docstring); open once a page shows it."""

    def __init__(self, timeout_seconds: float, shared: RedisQuestions | bool | None = True) -> None:
        """`shared`: the Redis of a team's replicas (by default from the environment: `redis_state.shared_state`)."""
        self.timeout_seconds = timeout_seconds
        self.url: str | None = None
        self.sign_in: str | None = None
        self._pending: dict[str, PendingQuestion] = {}
        if shared is True:
            settings = shared_state()
            shared = RedisQuestions(settings) if settings is not None else None
        self._shared: RedisQuestions | None = shared or None

    def open_at(self, url: str, sign_in: str | None = None) -> None:
        """The page showing the board is served at `url` (`sign_in`: how the person signs in, for the client)."""
        self.url, self.sign_in = url, sign_in

    @property
    def is_open(self) -> bool:
        return self.url is not None

    def pending(self, viewer: str | None = None) -> list[PendingQuestion]:
        """The questions still waiting (on every replica, with shared state), oldest first; for an OAuth user
        (`viewer`, a `User.id`), those they may answer (theirs, and those of no user)."""
        waiting = [question for question in self._pending.values() if question.outcome is None]
        if self._shared is not None:
            try:
                elsewhere = [fields for fields in self._shared.open() if fields["id"] not in self._pending]
            except Unreachable:
                elsewhere = []  # this replica's questions only, until Redis answers again
            waiting = sorted(waiting + [PendingQuestion.shared(f) for f in elsewhere], key=lambda q: q.asked_wall)
        return [question for question in waiting if viewer is None or question.owner in (None, viewer)]

    def put(self, tool: str, message: str, asker: str, owner: str | None = None) -> PendingQuestion:
        """A new question on the board; ToolFailure when too many wait already (on this replica)."""
        if sum(question.outcome is None for question in self._pending.values()) >= MAX_PENDING:
            raise ToolFailure(
                ErrorCode.MAX_LIMIT_EXCEEDED,
                f"{MAX_PENDING} questions already wait on the status page for an answer; answer them, then call again.",
            )
        question = PendingQuestion(secrets.token_urlsafe(9), tool, message, asker, self.timeout_seconds, owner)
        self._pending[question.id] = question
        if self._shared is not None:
            with suppress(Unreachable):  # else shown elsewhere once `wait` can write it
                self._shared.renew(question.shared_fields())  # on every page at once
        return question

    async def wait(self, question: PendingQuestion) -> Outcome:
        """The answer to `question`, or "timeout" once its time is up; it leaves the board either way (also when the
        wait is cancelled: the call was given up)."""
        try:
            with anyio.move_on_after(question.seconds_left):
                if self._shared is None:
                    await question.done.wait()
                else:
                    await self._wait_shared(question, self._shared)
        finally:
            self._pending.pop(question.id, None)
            if self._shared is not None:
                with anyio.CancelScope(shield=True):
                    given = await _off_loop(self._shared.close, question.id)
                if given is not None:  # an answer claimed elsewhere before the wait ended
                    self._settle(question, *given)
            if question.outcome is None:
                question.outcome = "timeout"
                question.done.set()
        return question.outcome

    async def _wait_shared(self, question: PendingQuestion, shared: RedisQuestions) -> None:
        """Until `question` is answered here, or on another replica (read every `POLL_SECONDS`); it is written again
        every `HEARTBEAT_SECONDS` (its heartbeat), and at once when its client goes or comes back."""
        renewed, shown = time.monotonic(), (question.disconnected_at, question.withdrawn_after)  # `put` wrote it
        while not question.done.is_set():
            state = (question.disconnected_at, question.withdrawn_after)
            if state != shown or time.monotonic() - renewed >= HEARTBEAT_SECONDS:
                renewed, shown = time.monotonic(), state
                given = await _off_loop(shared.renew, question.shared_fields())
            else:
                given = await _off_loop(shared.answer_of, question.id)
            if given is not None:
                self._settle(question, *given)
                return
            with anyio.move_on_after(POLL_SECONDS):
                await question.done.wait()

    @staticmethod
    def _settle(question: PendingQuestion, outcome: str, who: str) -> None:
        if question.outcome is None and outcome in ANSWERS:
            question.outcome = cast(Outcome, outcome)
            question.answered_by = who or None
            question.done.set()

    def withdraw(self, question: PendingQuestion) -> None:
        """`question` leaves the board unanswered: the client that asked it is gone (its wait returns "withdrawn"),
        unless an answer given on another replica came first (the wait then returns that one)."""
        if question.outcome is None and self._claim(question.id, "withdrawn", "", None)[0] != "answered":
            question.outcome = "withdrawn"
            question.done.set()

    def answer(self, question_id: str, approve: bool, who: str, viewer: str | None = None) -> PendingQuestion | None:
        """The person's answer; None when no such question waits (answered already, here or on another replica,
        timed out, or never asked) or it is another OAuth user's (`viewer`: the answering user's `User.id`)."""
        outcome: Outcome = "approve" if approve else "decline"
        question = self._pending.get(question_id)
        if question is None:  # another replica's, or none
            claimed, fields = self._claim(question_id, outcome, who, viewer)
            if claimed != "claimed":
                return None
            question = PendingQuestion.shared(fields)
        elif question.outcome is not None or (viewer is not None and question.owner not in (None, viewer)):
            return None
        elif self._claim(question_id, outcome, who, None)[0] == "answered":
            return None  # an answer given on another replica came first
        question.outcome = outcome
        question.answered_by = who
        question.done.set()
        return question

    def _claim(
        self, question_id: str, outcome: str, who: str, viewer: str | None
    ) -> tuple[Claim | None, dict[str, Any]]:
        """The shared claim of an answer (None: no shared state, or Redis does not answer)."""
        if self._shared is None:
            return None, {}
        try:
            return self._shared.claim(question_id, outcome, who, viewer)
        except Unreachable:
            return None, {}


async def _off_loop(call: Any, *args: Any) -> Any:
    """`call(*args)` to Redis in a worker thread (None when Redis does not answer)."""
    try:
        return await anyio.to_thread.run_sync(call, *args)
    except Unreachable:
        return None
