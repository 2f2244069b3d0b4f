"""A sub-agent started as a 2025-11-25 task samples the client's model through the task's `tasks/result`.

The task's work runs after the `tools/call` that created it was answered, so it has no request of its own to send
`sampling/createMessage` on: the request goes to the client with the related-task metadata on the stream of the
client's `tasks/result`, the task `input_required` meanwhile (2025-11-25 tasks). Before, the sub-agent found no
channel and the plan failed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gateway.helpers import write_config
from tests.gateway.test_sampling import SAMPLING_ONLY, ClientModel, gateway
from tests.stdio import data_of
from tests.tasks_client import create_legacy_task, legacy_get, legacy_result


@pytest.mark.anyio
async def test_a_sub_agent_run_as_a_2025_task_samples_through_tasks_result(tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.toml", SAMPLING_ONLY)
    model = ClientModel()
    async with gateway(config, model=model) as client:
        goal = {"goal": "[sample:calc] Add 2 and 3.", "sections": ["calculator"]}
        created = await create_legacy_task(client, "plan_actions", goal)
        task_id = created["task"]["taskId"]
        result = data_of(await legacy_result(client, task_id))
        assert result["success"] is True, result
        assert "Depth 1: 2 + 3 = 5 [calculator_binary]." in result["report"]
        assert len(model.requests) == 2  # both turns were asked of the client's model
        assert (await legacy_get(client, task_id)).status == "completed"
