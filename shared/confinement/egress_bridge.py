"""Inside a sandbox without a network: a loopback port that leads to the egress proxy's Unix socket, then the command.

A sandboxed installer has its own network namespace with nothing but loopback. The egress proxy
(`shared.confinement.egress_proxy`) listens on a Unix socket outside, which the sandbox binds in. This script runs first
inside the sandbox, with the sandbox's interpreter in isolated mode (`python3 -I -S`, so no `.pth` file or site-packages
of the project runs in it): it listens on `127.0.0.1:<port>`, forwards each connection to the socket, runs the command
as its child with `HTTP(S)_PROXY` pointing at that port, and exits with the command's status. A program inside can only
reach the proxy, which decides every destination; it can kill this bridge, which only cuts its own network.

Usage (inside the sandbox): python3 -I -S -c "<this file>" SOCKET PORT -- COMMAND...
The file is passed as source text (`source()`): the suite's own files are not visible in the sandbox.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
from pathlib import Path

CHUNK = 65536


def source() -> str:
    """This file's text, to run with `python3 -I -S -c` inside a sandbox (called outside it)."""
    return Path(__file__).read_text(encoding="utf-8")


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(CHUNK):
            target.sendall(data)
    except OSError:
        pass
    finally:
        for sock, how in ((target, socket.SHUT_WR), (source, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                sock.shutdown(how)


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            upstream.close()
            continue
        threading.Thread(target=_pump, args=(client, upstream), daemon=True).start()
        threading.Thread(target=_pump, args=(upstream, client), daemon=True).start()


def main(argv: list[str]) -> int:
    path, port, separator, *command = argv
    if separator != "--" or not command:
        print("usage: egress_bridge SOCKET PORT -- COMMAND...", file=sys.stderr)
        return 2
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(port)))
    listener.listen(64)
    threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    try:
        return subprocess.call(command)
    except OSError as exc:
        print(f"egress bridge: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
