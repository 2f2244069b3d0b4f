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

The board is only where questions wait; `shared.serving.approval` decides which calls need approval, words the
question, tells the client where to answer, and audits the answer.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Literal

import anyio

from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

MAX_PENDING = 32
Outcome = Literal["approve", "decline", "timeout", "withdrawn"]


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


class QuestionBoard:
    """This server's questions waiting for the person (see the module docstring); open once a page shows it."""

    def __init__(self, timeout_seconds: float) -> None:
        self.timeout_seconds = timeout_seconds
        self.url: str | None = None
        self.sign_in: str | None = None
        self._pending: dict[str, PendingQuestion] = {}

    def open_at(self, url: str, sign_in: str | None = None) -> None:
        """The page showing the board is served at `url` (`sign_in`: how the person signs in, for the client)."""
        self.url, self.sign_in = url, sign_in

    @property
    def is_open(self) -> bool:
        return self.url is not None

    def pending(self, viewer: str | None = None) -> list[PendingQuestion]:
        """The questions still waiting, oldest first; for an OAuth user (`viewer`, a `User.id`), those they may
        answer (theirs, and those of no user)."""
        return [
            question
            for question in self._pending.values()
            if question.outcome is None and (viewer is None or question.owner in (None, viewer))
        ]

    def put(self, tool: str, message: str, asker: str, owner: str | None = None) -> PendingQuestion:
        """A new question on the board; ToolFailure when too many wait already."""
        if len(self.pending()) >= MAX_PENDING:
            raise ToolFailure(
                ErrorCode.MAX_LIMIT_EXCEEDED,
                f"{MAX_PENDING} questions already wait on the status page for an answer; answer them, then call again.",
            )
        question = PendingQuestion(secrets.token_urlsafe(9), tool, message, asker, self.timeout_seconds, owner)
        self._pending[question.id] = question
        return question

    async def wait(self, question: PendingQuestion) -> Outcome:
        """The answer to `question`, or "timeout" once its time is up; it leaves the board either way (also when the
        wait is cancelled: the call was given up)."""
        try:
            with anyio.move_on_after(question.seconds_left):
                await question.done.wait()
        finally:
            self._pending.pop(question.id, None)
            if question.outcome is None:
                question.outcome = "timeout"
                question.done.set()
        return question.outcome

    def withdraw(self, question: PendingQuestion) -> None:
        """`question` leaves the board unanswered: the client that asked it is gone (its wait returns "withdrawn")."""
        if question.outcome is None:
            question.outcome = "withdrawn"
            question.done.set()

    def answer(self, question_id: str, approve: bool, who: str, viewer: str | None = None) -> PendingQuestion | None:
        """The person's answer; None when no such question waits (answered already, timed out, or never asked) or
        it is another OAuth user's (`viewer`: the answering user's `User.id`)."""
        question = self._pending.get(question_id)
        if question is None or question.outcome is not None:
            return None
        if viewer is not None and question.owner not in (None, viewer):
            return None
        question.outcome = "approve" if approve else "decline"
        question.answered_by = who
        question.done.set()
        return question
