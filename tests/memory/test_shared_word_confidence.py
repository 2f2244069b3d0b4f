"""memory_search's verdict in a small store, when a memory shares one word with the question in another sense.

An outside tester's fresh store of three memories answered a question about a database for "metrics" with the memory
about "metric units" first, verdict `match` (confidence 0.82). The former confidence read the similarity and the
margin over the best other memory, fitted on stores of 25 memories and more: in a store of three, any memory that
stands out looks like a match. It now reads each result on its own: its similarity, the similarity left when the
words it shares with the query are masked, and the share of the query's words it holds (`confidence.py`). The stores
below come from `benchmarks/data/memory_traps_heldout.json`, never fitted on; the real server, the real model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_sections.shared.embeddings.embedder import default_model_runs
from tests.in_memory import section_in_memory
from tests.stdio import data_of

pytestmark = pytest.mark.skipif(
    not default_model_runs(), reason="needs the memory extra: pip install 'mcp-sections[memory]'"
)

FLAGS = "Feature flags live in Unleash, and stale flags are removed after two releases."
NUTS = "The user is allergic to nuts; suggest nut-free options when planning team lunches."
LOKALISE = "Translations are managed in Lokalise and synced to the repository every night."
MONOREPO = "We rejected a monorepo because the build times of the Android app grew too long."
LINEAR = "We pay for Linear seats only for engineers; everyone else files issues by email."
LOKI = "We store application logs in Loki rather than Elasticsearch because it is cheaper to run."
DOCKER = "Our Docker containers are built from Debian slim images, never Alpine, because of musl issues."
PHONE = "The user reads answers on a phone, so code blocks should stay narrow."
CELSIUS = "The user wants temperatures in Celsius and distances in kilometres."

#: (question, the store's three memories, the memory found first: it shares a word with the question, not its sense)
TRAPS = [
    ("which flag flies on the office roof?", [FLAGS, LINEAR, LOKI], FLAGS),  # was match 0.79
    ("how many nuts should a squirrel store for winter?", [NUTS, DOCKER, PHONE], NUTS),  # was match 0.93
    ("why don't we keep everything in one repository?", [LOKALISE, MONOREPO, CELSIUS], LOKALISE),  # was match 0.76
]


async def search(tmp_path: Path, memories: list[str], query: str, mode: str) -> list[dict[str, Any]]:
    """A fresh store holding these memories, as the tester had, and the answer to `query`."""
    async with section_in_memory("memory", "--data-dir", str(tmp_path / "data")) as client:
        for content in memories:
            added = data_of(await client.call_tool("memory_add", {"type": "knowledge", "content": content}))
            assert added["memory_id"], added
        answer = data_of(await client.call_tool("memory_search", {"query": query, "mode": mode}))
    assert answer["search_type"] == mode, answer
    return answer["results"]  # type: ignore[no-any-return]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["vector", "hybrid"])
@pytest.mark.parametrize(("query", "memories", "bait"), TRAPS, ids=["flag", "nuts", "repository"])
async def test_one_shared_word_in_another_sense_is_not_a_match_in_a_small_store(
    tmp_path: Path, query: str, memories: list[str], bait: str, mode: str
) -> None:
    results = await search(tmp_path, memories, query, mode)
    first = results[0]
    assert first["memory"]["content"] == bait, results  # the model still ranks it first: only the verdict says so
    assert first["verdict"] != "match" and first["confidence"] < 0.7, first
    assert all(result["verdict"] != "match" for result in results), results


BONUS = "The yearly bonus is paid out with the February salary."
CLASSIFIER = "The model that classifies support emails is retrained each month on the newest tickets."


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("query", "memories"),
    [
        ("when do employees get their annual bonus?", [BONUS, LINEAR, LOKI]),
        ("how often is the email classifier updated?", [CLASSIFIER, NUTS, CELSIUS]),
    ],
    ids=["bonus", "classifier"],
)
async def test_a_right_answer_sharing_words_with_the_question_is_still_a_match(
    tmp_path: Path, query: str, memories: list[str]
) -> None:
    """The masking weighs against a memory only what the shared words alone made of it."""
    results = await search(tmp_path, memories, query, "vector")
    assert results[0]["memory"]["content"] == memories[0] and results[0]["verdict"] == "match", results
    assert [result["verdict"] for result in results[1:]] == ["unrelated", "unrelated"], results
