"""The gateway over HTTP on loopback with approval on and its status page open (no token), and what a person does
there: read the questions, answer one; the approvals audit. Shared by the tests whose questions wait on the page."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx

from mcp_sections.shared.serving.audit import read_records
from tests.processes import serving_over_http
from tests.stdio import REPO

APPROVAL = {"MCP_SECTIONS_APPROVAL": "destructive", "MCP_SECTIONS_CONFIG": os.devnull}


@dataclass
class PageGateway:
    port: int
    root: Path
    data: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def questions(self) -> list[dict[str, Any]]:
        """The questions the page shows: id, csrf, text, and whether the page says their client is disconnected."""
        async with httpx.AsyncClient(timeout=20) as http:
            html = (await http.get(f"{self.url}/status/live")).text
        found = []
        for item in re.findall(r'<li class="question".*?</li>', html, re.S):
            question = re.search(r'data-question="([^"]+)"', item)
            csrf = re.search(r'name=csrf value="([^"]+)"', item)
            assert question is not None and csrf is not None
            disconnected = "the client that asked is disconnected" in item
            found.append({"id": question[1], "csrf": csrf[1], "text": item, "disconnected": disconnected})
        return found

    async def answer(self, question: dict[str, Any], approve: bool) -> int:
        """The person's answer on the page; its HTTP status (303 taken, 409 no longer waiting)."""
        form = {"csrf": question["csrf"], "answer": "approve" if approve else "decline"}
        async with httpx.AsyncClient(timeout=20) as http:
            response = await http.post(f"{self.url}/status/questions/{question['id']}", data=form)
        return response.status_code

    def approvals(self) -> list[dict[str, Any]]:
        return list(read_records(self.data / "audit", "gateway.approvals"))


@contextmanager
def page_gateway(base: Path, section: str) -> Iterator[tuple[int, Path, Path]]:
    """(port, root, data) of the gateway served over HTTP from `base`, approval on, `section` in its process."""
    root, data = base / "root", base / "data"
    root.mkdir()
    args = ["gateway", "--data-dir", str(data), "--root", str(root), "--in-process", section]
    with serving_over_http(args, APPROVAL, cwd=REPO) as (port, _):
        yield port, root, data
