"""The background warm-up of a section (`shared.serving.pipeline.SectionState.start_warm_up`): a missing optional
dependency is the "degraded" state doctor describes, said in one line with its install command; a real crash keeps its
traceback. An outside tester saw the calculator log a full WorkerStartError traceback on a light install (no sympy)."""

from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path

import pytest

from mcp_sections.servers.registry import load_section
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.serving.pipeline import SectionState
from mcp_sections.shared.settings.config import Settings
from tests.stdio import section_client
from tests.waiting import eventually

#: On the server's PYTHONPATH: the modules named in HIDDEN_MODULES cannot be imported, nor found (a light install),
#: in the server and in the processes it starts (the calculator's worker).
HIDING = """
import os, sys

HIDDEN = set(os.environ["HIDDEN_MODULES"].split(","))


class Hidden:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Hidden)
"""


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("section", "hidden", "said"),
    [
        (
            "calculator",
            "sympy,mpmath",
            (
                "warm-up of section calculator",
                "skipped: Python modules 'sympy', 'mpmath' are not installed — run: ",
                "pip install",
                "[calculator]', then restart the server; until then: the float tools only",
            ),
        ),
        (
            "memory",
            "numpy,onnxruntime,tokenizers,onnx,safetensors",
            ("embedding model all-MiniLM-L6-v2 cannot be loaded",),
        ),
    ],
)
async def test_a_light_install_warms_up_without_a_traceback(
    tmp_path: Path, section: str, hidden: str, said: tuple[str, ...]
) -> None:
    """What is missing and the install command, in one line (the command's words depend on the installation); the
    first of `said` is the line waited for, all of them are in it."""
    (tmp_path / "hiding").mkdir()
    (tmp_path / "hiding" / "sitecustomize.py").write_text(HIDING, encoding="utf-8")
    path = [str(tmp_path / "hiding"), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {"PYTHONPATH": os.pathsep.join(path), "HIDDEN_MODULES": hidden}
    log = tmp_path / "stderr.log"
    with log.open("w") as errlog:
        async with section_client(section, "--data-dir", str(tmp_path / "data"), env=env, errlog=errlog) as client:
            await client.list_tools()  # the warm-up starts once tools/list is answered
            line = await eventually(lambda: _line_with(log, said[0]), timeout=60)
    assert all(part in line for part in said), line
    assert "Traceback" not in log.read_text(), log.read_text()


def _line_with(log: Path, text: str) -> str | None:
    return next((line for line in log.read_text().splitlines() if text in line), None)


def _warming(tmp_path: Path, failure: BaseException) -> SectionState:
    """todo's real state, with a warm-up that fails with `failure`."""

    def warm_up(state: object) -> None:
        raise failure

    section = dataclasses.replace(load_section("todo"), warm_up=warm_up)
    state = SectionState(section, section.runtime(Settings.load(data_dir=tmp_path / "data")))
    state.start_warm_up()
    return state


def _warm_up_record(caplog: pytest.LogCaptureFixture) -> logging.LogRecord | None:
    return next((record for record in caplog.records if record.getMessage().startswith("warm-up of section")), None)


@pytest.mark.anyio
async def test_a_dependency_error_is_one_line_and_a_crash_keeps_its_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_sections.pipeline")
    _warming(tmp_path, ToolFailure(ErrorCode.DEPENDENCY_ERROR, "the engine is not installed; run: pip install x"))
    record = await eventually(lambda: _warm_up_record(caplog))
    assert record.getMessage() == "warm-up of section todo skipped: the engine is not installed; run: pip install x"
    assert record.exc_info is None
    caplog.clear()
    _warming(tmp_path, RuntimeError("a real bug"))
    record = await eventually(lambda: _warm_up_record(caplog))
    assert record.getMessage() == "warm-up of section todo failed" and record.exc_info is not None
