"""Real documentation pages for bench_web and web_ops' tests, kept small in the repository.

`pages.tar.xz` holds each page byte for byte as its generator wrote it; `manifest.json` says, per page, its path,
generator, source and license, and per generator the XPath of the main region and of the navigation (used only
for ground truth). `build.py` rebuilds both. `serving()` serves the pages on 127.0.0.1 under their paths.
"""

from __future__ import annotations

import contextlib
import io
import json
import tarfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class CorpusPage:
    path: str  # as served, e.g. "python/library/functions.html"
    generator: str
    source: str
    license: str
    html: bytes
    main_xpath: str
    navigation_xpaths: tuple[str, ...]


@cache
def pages() -> tuple[CorpusPage, ...]:
    """Every page of the corpus, in path order."""
    manifest = json.loads((HERE / "manifest.json").read_text())
    with tarfile.open(HERE / "pages.tar.xz", mode="r:xz") as archive:
        bodies = {member.name: archive.extractfile(member).read() for member in archive if member.isfile()}  # type: ignore[union-attr]
    out = []
    for entry in manifest["pages"]:
        region = manifest["regions"][entry["generator"]]
        out.append(
            CorpusPage(
                path=entry["path"],
                generator=entry["generator"],
                source=entry["source"],
                license=entry["license"],
                html=bodies[entry["path"]],
                main_xpath=region["main"],
                navigation_xpaths=tuple(region["navigation"]),
            )
        )
    return tuple(out)


def page(path: str) -> CorpusPage:
    return next(p for p in pages() if p.path == path)


@contextlib.contextmanager
def serving() -> Iterator[str]:
    """The corpus over HTTP on 127.0.0.1; yields the base URL (`http://127.0.0.1:PORT/`)."""
    bodies = {f"/{p.path}": p.html for p in pages()}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            body = bodies.get(self.path.split("?", 1)[0].split("#", 1)[0])
            status, content_type = (200, "text/html; charset=utf-8") if body is not None else (404, "text/plain")
            body = body if body is not None else b"not found"
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):
                self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def archive_bytes(files: dict[str, bytes]) -> bytes:
    """A reproducible tar.xz of `files` (sorted names, no times): how build.py writes pages.tar.xz."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:xz", preset=9) as archive:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(files[name]), 0, 0o644
            archive.addfile(info, io.BytesIO(files[name]))
    return buffer.getvalue()
