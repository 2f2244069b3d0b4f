"""Approval questions shared by replicas through a real Redis server (`shared/store/redis_questions.py`): two boards
in one process stand for two replicas' (`shared/serving/question_board.py`), each with its own Redis client, as in two
processes; the gateway replicas over HTTP are `test_questions_across_replicas.py`.

Shown: a question asked on A is listed on B (only to its user) and answered there, and A's wait gets that answer
once; a second answer, on either replica, is refused; a withdrawn question cannot be answered anywhere, and a
withdrawal that comes after an answer given elsewhere yields to it; a question whose replica stopped renewing it (it
died) leaves B's page; with Redis unreachable a board keeps its own questions, as with one replica."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from mcp_sections.shared.serving import question_board
from mcp_sections.shared.serving.question_board import Outcome, PendingQuestion, QuestionBoard
from mcp_sections.shared.store import redis_questions
from mcp_sections.shared.store.redis_questions import RedisQuestions
from mcp_sections.shared.store.redis_state import SharedStateSettings
from tests.processes import free_port
from tests.team.engines import Redis
from tests.waiting import eventually

pytestmark = pytest.mark.anyio
ALICE, BOB = "alice-id", "bob-id"


def board(url: str, prefix: str, timeout: float = 60) -> QuestionBoard:
    return QuestionBoard(timeout, shared=RedisQuestions(SharedStateSettings(redis_url=url, redis_prefix=prefix)))


@asynccontextmanager
async def waiting(on: QuestionBoard, owner: str | None = ALICE) -> AsyncIterator[tuple[PendingQuestion, list[Outcome]]]:
    """A call's question put on `on` and waited for there while the block runs: the question, and its outcome once
    the wait returned."""
    question = on.put("todo_delete", "Allow call_section_tool to run todo_delete?", "alice with a client", owner)
    outcome: list[Outcome] = []

    async def wait() -> None:
        outcome.append(await on.wait(question))

    async with anyio.create_task_group() as group:
        group.start_soon(wait)
        yield question, outcome
        await eventually(lambda: outcome, timeout=10)


def ids(questions: list[PendingQuestion]) -> list[str]:
    return [question.id for question in questions]


async def test_a_question_asked_on_a_is_listed_and_answered_on_b_once(redis: Redis, redis_prefix: str) -> None:
    a, b = board(redis.url, redis_prefix), board(redis.url, redis_prefix)
    async with waiting(a) as (question, outcome):
        (shown,) = b.pending(ALICE)
        assert (shown.id, shown.message, shown.owner) == (question.id, question.message, ALICE)
        assert 55 < shown.seconds_left <= 60 and shown.withdrawn_in is None
        assert ids(b.pending()) == [question.id], "an open page (one person) sees every question"
        assert b.pending(BOB) == [] and b.answer(question.id, True, "bob on b", BOB) is None, "bob's is another's"
        answered = b.answer(question.id, True, "alice on b", ALICE)
        assert answered is not None and answered.outcome == "approve"
        assert b.answer(question.id, False, "alice again on b", ALICE) is None
        assert a.answer(question.id, False, "alice on a", ALICE) is None, "the answer given on B came first"
    assert outcome == ["approve"] and question.answered_by == "alice on b"
    assert a.pending() == [] and b.pending() == []
    assert b.answer(question.id, True, "alice late", ALICE) is None


async def test_an_answer_on_the_asking_replica_is_final_everywhere(redis: Redis, redis_prefix: str) -> None:
    a, b = board(redis.url, redis_prefix), board(redis.url, redis_prefix)
    async with waiting(a, owner=None) as (question, outcome):
        await eventually(lambda: b.pending(BOB))  # a question of no user: every user sees it
        assert a.answer(question.id, False, "the person on a") is not None
        assert b.answer(question.id, True, "someone on b") is None
    assert outcome == ["decline"] and question.answered_by == "the person on a"
    assert b.pending() == []


async def test_a_withdrawn_question_is_refused_everywhere(redis: Redis, redis_prefix: str) -> None:
    a, b = board(redis.url, redis_prefix), board(redis.url, redis_prefix)
    async with waiting(a) as (question, outcome):
        assert ids(b.pending(ALICE)) == [question.id]
        a.withdraw(question)
        assert b.answer(question.id, True, "alice on b", ALICE) is None
    assert outcome == ["withdrawn"] and b.pending() == []


async def test_a_withdrawal_after_an_answer_given_elsewhere_yields_to_it(redis: Redis, redis_prefix: str) -> None:
    a, b = board(redis.url, redis_prefix), board(redis.url, redis_prefix)
    async with waiting(a) as (question, outcome):
        assert b.answer(question.id, True, "alice on b", ALICE) is not None
        a.withdraw(question)  # the client went away after the person had answered: the answer stands
    assert outcome == ["approve"] and question.answered_by == "alice on b"


async def test_a_question_nobody_answers_times_out_and_leaves_every_page(redis: Redis, redis_prefix: str) -> None:
    a, b = board(redis.url, redis_prefix, timeout=1), board(redis.url, redis_prefix)
    async with waiting(a) as (question, outcome):
        assert ids(b.pending()) == [question.id]
    assert outcome == ["timeout"] and b.pending() == []
    assert b.answer(question.id, True, "alice too late", ALICE) is None


async def test_the_questions_of_a_replica_that_died_leave_the_other_pages(
    redis: Redis, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dead replica's question expires; the living one's, renewed by its wait, stays."""
    monkeypatch.setattr(redis_questions, "HEARTBEAT_TTL_SECONDS", 1.0)
    monkeypatch.setattr(question_board, "HEARTBEAT_SECONDS", 0.2)
    dead, alive, b = (board(redis.url, redis_prefix) for _ in range(3))
    gone = dead.put("todo_delete", "Allow it?", "alice", ALICE)  # its replica dies before renewing it
    async with waiting(alive) as (kept, outcome):
        assert ids(b.pending(ALICE)) == [gone.id, kept.id], "oldest first"
        await eventually(lambda: ids(b.pending(ALICE)) == [kept.id], timeout=10)
        assert b.answer(gone.id, True, "alice on b", ALICE) is None
        assert b.answer(kept.id, True, "alice on b", ALICE) is not None
    assert outcome == ["approve"]


async def test_without_redis_a_board_keeps_its_own_questions(redis_prefix: str) -> None:
    """Redis not reachable (nothing listens on its port): the questions stay on the replica that asked them."""
    pytest.importorskip("redis", reason="redis is part of the team extra: pip install 'mcp-sections[team]'")
    a = board(f"redis://127.0.0.1:{free_port()}/0", redis_prefix)
    async with waiting(a) as (question, outcome):
        assert ids(a.pending(ALICE)) == [question.id]
        assert a.answer(question.id, True, "alice on a", ALICE) is not None
    assert outcome == ["approve"]
