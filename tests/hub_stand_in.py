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


class StandInHandler(ScriptedHandler):
    """GET answers with the bytes; HEAD with the same headers (the length included) and no body."""

    def answer(self, body: bool) -> None:
        raise NotImplementedError

    def do_GET(self) -> None:
        self.answer(body=True)

    def do_HEAD(self) -> None:
        self.answer(body=False)

    def reply(self, status: int, data: bytes, body: bool, **headers: str) -> None:
        if body:
            return self.answer_bytes(status, data, "application/octet-stream", **headers)
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        return None


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

    class Cdn(StandInHandler):
        def answer(self, body: bool) -> None:
            hub.requests.append((self.command, self.path))
            data = hub.blobs().get(self.path.rsplit("/", 1)[-1])
            if data is None:
                return self.reply(404, b"", body)
            return self.reply(200, data, body, ETag=f'"{hashlib.sha256(data).hexdigest()}"')

    class Hub(StandInHandler):
        def answer(self, body: bool) -> None:
            hub.requests.append((self.command, self.path))
            prefix = f"/{hub.repo}/resolve/"
            path = unquote(self.path.split("?", 1)[0])
            if not path.startswith(prefix):
                return self.reply(404, b"", body, X_Error_Code="RepoNotFound")
            revision, _, name = path[len(prefix) :].partition("/")
            commit = hub.branches.get(revision, revision)
            files = hub.commits.get(commit)
            if files is None:
                return self.reply(404, b"", body, X_Error_Code="RevisionNotFound")
            data = files.get(name)
            if data is None:
                return self.reply(404, b"", body, X_Error_Code="EntryNotFound", X_Repo_Commit=commit)
            if not name.endswith(LFS_SUFFIXES):
                return self.reply(200, data, body, X_Repo_Commit=commit, ETag=f'"{git_blob_id(data)}"')
            sha256 = hashlib.sha256(data).hexdigest()
            return self.reply(
                302,
                b"",
                body,
                Location=f"http://127.0.0.1:{hub.cdn_port}/blobs/{sha256}",
                X_Repo_Commit=commit,
                X_Linked_Etag=f'"{sha256}"',
                X_Linked_Size=str(len(data)),
            )

    with ExitStack() as stack:
        hub.cdn_port = stack.enter_context(Serving(Cdn)).port
        hub.port = stack.enter_context(Serving(Hub)).port
        yield hub
