"""A user's tasks are theirs on either protocol wire (issue #42): a task a client made on 2026-07-28 is listed, read
and cancelled by the same user and program on 2025-11-25, in that era's names (`ttl`, `pollInterval`: the SDK's
2025-11-25 models validate them), and the other way round. The tasks test section over Streamable HTTP on 127.0.0.1
(`tests/framework/tasks_section.py`), one client of each era after the other."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.framework.test_tasks import connect, http_section
from tests.tasks_client import (
    CreatedTask,
    call_for_task,
    create_legacy_task,
    get_task,
    legacy_cancel,
    legacy_get,
    legacy_list,
)

pytestmark = pytest.mark.anyio


async def test_a_task_made_on_one_wire_is_read_listed_and_cancelled_on_the_other(tmp_path: Path) -> None:
    audit = tmp_path / "audit"
    with http_section(tmp_path) as url:
        async with connect(url, legacy=False, audit=audit) as modern:
            created = await call_for_task(modern.client, "slow_compute", {"seconds": 60, "label": "modern"})
            assert isinstance(created, CreatedTask)
        async with connect(url, legacy=True, audit=audit) as legacy:
            listed = await legacy_list(legacy.client)  # validated as 2025-11-25 tasks
            assert created.task_id in {task.task_id for task in listed.tasks}
            task = await legacy_get(legacy.client, created.task_id)
            assert task.status == "working" and task.ttl is not None and task.poll_interval is not None
            assert (await legacy_cancel(legacy.client, created.task_id)).status == "cancelled"
            made = await create_legacy_task(legacy.client, "slow_compute", {"seconds": 60, "label": "legacy"})
        async with connect(url, legacy=False, audit=audit) as modern:
            detailed = await get_task(modern.session, made["task"]["taskId"])
            assert detailed.status == "working" and detailed.ttl_ms is not None and detailed.poll_interval_ms
