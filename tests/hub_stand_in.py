"""A Hugging Face hub on 127.0.0.1 for `HF_ENDPOINT`: the hub's URL layout and the headers huggingface_hub reads.

`GET|HEAD /{repo}/resolve/{revision}/{file}` answers as the hub does: a file kept in git with its bytes, `ETag` its
git blob id and `X-Repo-Commit` the commit; a large (LFS) file with a 302 to a second server standing in for the
hub's CDN, `X-Linked-Etag` its sha256 and `X-Linked-Size` its size. A branch name resolves to its commit; an
unknown revision or file gets the hub's 404 with its `X-Error-Code`. Requests are recorded (method, path).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from urllib.parse import unquote

from tests.http_stand_in import ScriptedHandler, Serving

LFS_SUFFIXES = (".safetensors", ".bin", ".onnx", ".h5", ".ot", ".msgpack")


def git_blob_id(data: bytes) -> str:
    """The id git gives a file's bytes (what the hub sends as the ETag of a file kept in git)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class HubStandIn:
    """`commits`: commit -> {file path: bytes}; `branches`: name -> commit."""

    repo: str
    commits: dict[str, dict[str, bytes]]
    branches: dict[str, str] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    port: int = 0
    cdn_port: int = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def blobs(self) -> dict[str, bytes]:
        return {hashlib.sha256(data).hexdigest(): data for files in self.commits.values() for data in files.values()}


@contextmanager
def hub_stand_in(
    repo: str, commits: dict[str, dict[str, bytes]], branches: dict[str, str] | None = None
) -> Iterator[HubStandIn]:
    """The hub and its CDN served from threads until the block ends."""
    hub = HubStandIn(repo, commits, dict(branches or {}))

    class Cdn(ScriptedHandler):
        def do_HEAD(self) -> None:
            self._blob(body=False)

        def do_GET(self) -> None:
            self._blob(body=True)

        def _blob(self, body: bool) -> None:
            hub.requests.append((self.command, self.path))
            data = hub.blobs().get(self.path.rsplit("/", 1)[-1])
            if data is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
            self.end_headers()
            if body:
                self.wfile.write(data)

    class Hub(ScriptedHandler):
        def do_HEAD(self) -> None:
            self._resolve(body=False)

        def do_GET(self) -> None:
            self._resolve(body=True)

        def _resolve(self, body: bool) -> None:
            hub.requests.append((self.command, self.path))
            prefix = f"/{hub.repo}/resolve/"
            path = unquote(self.path.split("?", 1)[0])
            if not path.startswith(prefix):
                return self._error(404, "RepoNotFound", None)
            revision, _, name = path[len(prefix) :].partition("/")
            commit = hub.branches.get(revision, revision)
            files = hub.commits.get(commit)
            if files is None:
                return self._error(404, "RevisionNotFound", None)
            data = files.get(name)
            if data is None:
                return self._error(404, "EntryNotFound", commit)
            if name.endswith(LFS_SUFFIXES):
                sha256 = hashlib.sha256(data).hexdigest()
                self.send_response(302)
                self.send_header("Location", f"http://127.0.0.1:{hub.cdn_port}/blobs/{sha256}")
                self.send_header("X-Repo-Commit", commit)
                self.send_header("X-Linked-Etag", f'"{sha256}"')
                self.send_header("X-Linked-Size", str(len(data)))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("X-Repo-Commit", commit)
            self.send_header("ETag", f'"{git_blob_id(data)}"')
            self.end_headers()
            if body:
                self.wfile.write(data)
            return None

        def _error(self, status: int, code: str, commit: str | None) -> None:
            self.send_response(status)
            self.send_header("X-Error-Code", code)
            if commit:
                self.send_header("X-Repo-Commit", commit)
            self.send_header("Content-Length", "0")
            self.end_headers()

    with ExitStack() as stack:
        hub.cdn_port = stack.enter_context(Serving(Cdn)).port
        hub.port = stack.enter_context(Serving(Hub)).port
        yield hub
