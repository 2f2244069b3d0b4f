"""doctor against the first calls: for each section, what `mcp-sections doctor` says and what its first calls do.

    python -m benchmarks.doctor_check            # the table, for the environment of this interpreter
    python -m benchmarks.doctor_check --json     # the same as JSON (tests/doctor/test_first_calls.py reads it)

Each section is served as `mcp-sections serve <id>` serves it, in this process (the official client over the SDK's
in-memory transport), on a fresh data directory, with no config file; its first calls are one per capability doctor
tells apart (the float tools and the exact engine, text and meaning search, HTTP and the browser, ...). A call either
works, works degraded (its result says so: a text-only search, a file kept as plain text), or fails with
DEPENDENCY_ERROR; any other failure is a mistake of this script. The section then *does*: ready (every call works),
unavailable (every call fails with DEPENDENCY_ERROR) or degraded (anything between), which doctor must have said.
search_web is left out: it needs the internet or a configured search service, which doctor does not check.
It needs only the base install (no pytest): it runs in a light environment as it does in the full one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.http_stand_in import ScriptedHandler, serving

Judge = Callable[[dict[str, Any]], str | None]  # a working call's result -> None, or how it is degraded


@dataclass(frozen=True)
class FirstCall:
    tool: str
    arguments: dict[str, Any]
    judge: Judge | None = None


@dataclass
class CallOutcome:
    tool: str
    outcome: str  # "works", "degraded", "DEPENDENCY_ERROR", or another error code (a mistake of this script)
    detail: str = ""


@dataclass
class SectionCheck:
    section: str
    doctor: str
    does: str
    doctor_text: str
    calls: list[CallOutcome] = field(default_factory=list)


def _text_only(data: dict[str, Any]) -> str | None:
    kind = data.get("search_type") or data.get("mode")
    return f"{kind} search" if kind == "text" else None


def _no_scopes(data: dict[str, Any]) -> str | None:
    return None if data.get("scopes") else "kept as plain text (no functions found)"


JS = "function hello() { return 1; }\n"


def first_calls(root: Path, site: str) -> dict[str, tuple[list[str], dict[str, str], list[FirstCall]]]:
    """Per section: the `serve` arguments, its environment, and its first calls (files made under `root`)."""
    return {
        "calculator": (
            [],
            {},
            [
                FirstCall("calculator_binary", {"operation": "add", "a": 1, "b": 2}),
                FirstCall("calculator_evaluate", {"expression": "2**100 + 1/3"}),
            ],
        ),
        "todo": ([], {}, [FirstCall("todo_create", {"name": "first task"})]),
        "file_ops": (
            ["--root", str(root)],
            {},
            [
                FirstCall("read_file", {"path": str(root / "hello.py")}),
                FirstCall("search_files", {"pattern": "hello", "path": str(root)}),
            ],
        ),
        "shell_ops": (
            ["--root", str(root)],
            {},
            [
                FirstCall("run_command", {"command": ["ls"], "cwd": str(root)}),
                FirstCall("git_status", {"cwd": str(root)}),
            ],
        ),
        "memory": (
            [],
            {},
            [
                FirstCall("memory_add", {"type": "knowledge", "content": "The build runs on two cores."}),
                FirstCall("memory_search", {"query": "how many processors does the build use"}, _text_only),
            ],
        ),
        "rag_ops": (
            ["--root", str(root)],
            {},
            [
                FirstCall(
                    "ingest_code", {"content": "function hello() { return 1; }\n", "file_path": "hello.js"}, _no_scopes
                ),
                FirstCall("brain_search", {"query": "hello"}, _text_only),
            ],
        ),
        "orchestration": (
            [],
            {},
            [
                FirstCall("list_children", {}),
                FirstCall("spawn_agent", {"name": "helper", "prompt": "Say hello.", "sections": ["calculator"]}),
            ],
        ),
        "web_ops": (
            [],
            {"MCP_SECTIONS_WEB_OPS_ALLOW": site.removeprefix("http://"), "MCP_SECTIONS_WEB_OPS_EMBEDDINGS": "false"},
            [
                FirstCall("fetch_web_page", {"url": f"{site}/page.html", "render": "http"}),
                FirstCall("fetch_web_page", {"url": f"{site}/page.html", "render": "browser"}),
            ],
        ),
        "media_ops": (
            ["--root", str(root)],
            {},
            [
                FirstCall("list_images", {"directory": str(root)}),
                FirstCall("read_image", {"path": str(root / "white.png")}),
                FirstCall("render_3d_asset", {"path": str(root / "triangle.obj"), "views": 1, "size": 64}),
                FirstCall("describe_image", {"path": str(root / "white.png")}),
            ],
        ),
    }


def _fixtures(root: Path) -> None:
    (root / "hello.py").write_text("def hello():\n    return 'hello'\n", encoding="utf-8")
    rows = b"".join(b"\x00" + b"\xff\xff\xff" * 16 for _ in range(16))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 16, 16, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
    (root / "white.png").write_bytes(png)
    (root / "triangle.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(root)], check=False, capture_output=True)


class _Page(ScriptedHandler):
    BODY = (
        b"<html><head><title>Hello</title></head><body><main><h1>Hello</h1><p>A page to fetch.</p></main></body></html>"
    )

    def do_GET(self) -> None:
        self.answer_bytes(200 if self.path == "/page.html" else 404, self.BODY, "text/html; charset=utf-8")


@contextmanager
def _site() -> Iterator[str]:
    with serving(_Page) as port:
        yield f"http://127.0.0.1:{port}"


async def _call_all(section: str, args: list[str], calls: list[FirstCall]) -> list[CallOutcome]:
    from mcp import Client

    from mcp_sections.servers.cli import build_parser, section_server, settings_from

    parsed = build_parser().parse_args(["serve", section, *args])
    server = section_server(parsed, settings_from(parsed))
    outcomes = []
    async with Client(server, read_timeout_seconds=300) as client:
        for call in calls:
            result = await client.call_tool(call.tool, call.arguments)
            data = result.structured_content or {}
            if result.is_error:
                code = str(data.get("error_code", "?"))
                outcomes.append(CallOutcome(call.tool, code, str(data.get("error", ""))[:600]))
                continue
            degraded = call.judge(data) if call.judge else None
            notes = [data["note"]] if isinstance(data.get("note"), str) else list(data.get("notes") or [])
            detail = "; ".join([degraded, *notes]) if degraded else ""
            outcomes.append(CallOutcome(call.tool, "degraded" if degraded else "works", detail[:600]))
    return outcomes


def what_it_does(calls: list[CallOutcome]) -> str:
    if all(call.outcome == "works" for call in calls):
        return "ready"
    if all(call.outcome == "DEPENDENCY_ERROR" for call in calls):
        return "unavailable"
    return "degraded"


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def check(sections: list[str] | None = None) -> list[SectionCheck]:
    """doctor's verdict and the first calls of each section (all by default), in a fresh data directory."""
    from mcp_sections.servers import doctor

    checks = []
    with tempfile.TemporaryDirectory(prefix="doctor-check-") as temporary, _site() as site:
        base = Path(temporary)
        root = base / "root"
        root.mkdir()
        _fixtures(root)
        plan = first_calls(root, site)
        common = {"MCP_SECTIONS_CONFIG": os.devnull, "MCP_SECTIONS_WARM_UP": "0"}
        for section in sections or list(plan):
            args, env, calls = plan[section]
            data_dir = {"MCP_SECTIONS_DATA_DIR": str(base / "data" / section)}
            with _environment({**common, **data_dir, **env}):
                report = doctor.check_section(section)
                outcomes = asyncio.run(_call_all(section, args, calls))
            does = what_it_does(outcomes)
            checks.append(SectionCheck(section, report.status, does, doctor.render([report]), outcomes))
    return checks


def render(checks: list[SectionCheck]) -> str:
    lines = [f"{'SECTION':<14} {'DOCTOR':<12} {'FIRST CALLS':<12} CALLS"]
    for item in checks:
        calls = ", ".join(f"{call.tool}: {call.outcome}" for call in item.calls)
        lines.append(f"{item.section:<14} {item.doctor:<12} {item.does:<12} {calls}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--sections", default="", help="comma-separated section ids (default: every one)")
    options = parser.parse_args(argv)
    checks = check([name for name in options.sections.split(",") if name] or None)
    if options.json:
        print(json.dumps([asdict(item) for item in checks], indent=2))
    else:
        print(render(checks))
    return 0 if all(item.doctor == item.does for item in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
