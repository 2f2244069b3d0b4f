"""Publishing a sandboxed server's loopback ports on the host's 127.0.0.1, without giving it a network.

A program inside bubblewrap has its own network namespace holding only a loopback interface: a dev server there
listens where nothing outside can reach it, and the program can reach nothing either. To let an agent fetch the
dev server (web_ops, on an address its operator allowed), the server listens on the host's 127.0.0.1:PORT itself
and carries each connection into the sandbox over a Unix socket pair it passed in at start:

- inside, `RELAY_SOURCE` runs first (the standard library only, `python3 -I -S`): it starts the program (which
  inherits stdin, stdout and stderr), receives one socket per incoming connection over the control socket
  (SCM_RIGHTS), connects it to 127.0.0.1:PORT (then ::1) in the sandbox, and copies both ways; it ignores
  SIGINT/SIGTERM/SIGHUP (they are meant for the program), and exits with the program's status;
- outside, `PortPublisher` accepts on 127.0.0.1:PORT, makes a socket pair per connection, passes one end in, and
  copies between the client and the other end.

No path is involved (a file-system socket in a directory the program can write could be replaced by a link to
another socket on the host); the program still has no route out; at most MAX_CONNECTIONS connections at once.
While the relay accepts, each of its ports has an entry in the registry of published ports
(`shared.confinement.published_ports`), which is how web_ops knows that it may read this dev server, and nothing else on
loopback.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import threading
from collections.abc import Sequence

from mcp_sections.shared.confinement.published_ports import PublishedPorts

MAX_CONNECTIONS = 64
FIRST_PORT, LAST_PORT = 1024, 65535

RELAY_SOURCE = r"""
import os, signal, socket, struct, sys, threading
control = socket.socket(fileno=int(sys.argv[1]))
argv = sys.argv[3:]
for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(signum, signal.SIG_IGN)
pid = os.fork()
if pid == 0:
    control.close()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    try:
        os.execv(argv[0], argv)
    except OSError as exc:
        sys.stderr.write(f"relay: cannot run {argv[0]}: {exc.strerror}\n")
        os._exit(127)

def copy(source, target):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    for sock in (target, source):
        try:
            sock.shutdown(socket.SHUT_WR if sock is target else socket.SHUT_RD)
        except OSError:
            pass

def serve(outside, port):
    inside = None
    for host in ("127.0.0.1", "::1"):
        try:
            inside = socket.create_connection((host, port), timeout=5)
            inside.settimeout(None)
            break
        except OSError:
            continue
    if inside is None:
        outside.close()
        return
    back = threading.Thread(target=copy, args=(inside, outside), daemon=True)
    back.start()
    copy(outside, inside)
    back.join()
    inside.close()
    outside.close()

def accept():
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(control, 2, 1)
        except OSError:
            return
        if not data:
            return
        if len(data) != 2 or not fds:
            for fd in fds:
                os.close(fd)
            continue
        outside = socket.socket(fileno=fds[0])
        threading.Thread(target=serve, args=(outside, struct.unpack("!H", data)[0]), daemon=True).start()

threading.Thread(target=accept, daemon=True).start()
_, status = os.waitpid(pid, 0)
os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
"""


def relay_argv(python: str, control_fd: int, argv: Sequence[str]) -> list[str]:
    """The command that runs `argv` behind the relay (inside the sandbox)."""
    return [python, "-I", "-S", "-c", RELAY_SOURCE, str(control_fd), "--", *argv]


class PortPublisher:
    """Listens on the host's 127.0.0.1 for each port and carries connections into one sandbox (see the module
    docstring). `control` is the server's end of the socket pair whose other end the relay holds."""

    def __init__(self, ports: Sequence[int], registry: PublishedPorts | None = None) -> None:
        """`registry`: where the ports are recorded while the relay accepts (see the module docstring)."""
        self.ports = tuple(ports)
        self.registry = registry
        self._recorded: list[tuple[int, int]] = []  # (port, listening socket's inode)
        self.control, self.inside = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.inside.set_inheritable(True)
        self._listeners: list[socket.socket] = []
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._send = threading.Lock()
        self._closed = False
        try:
            for port in self.ports:
                listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    listener.bind(("127.0.0.1", port))
                except OSError:
                    listener.close()
                    raise
                listener.listen(16)
                self._listeners.append(listener)
        except OSError:
            self.close()
            raise

    def start(self) -> None:
        """Accept connections (after the program has started: the relay's end is then in the sandbox)."""
        self.inside.close()
        for listener, port in zip(self._listeners, self.ports, strict=True):
            threading.Thread(target=self._accept, args=(listener, port), name=f"relay-{port}", daemon=True).start()
            if self.registry is not None and not self._closed:
                inode = os.fstat(listener.fileno()).st_ino
                self.registry.record(port, inode)
                self._recorded.append((port, inode))

    def close(self) -> None:
        """Stop listening at once (the port is free again when this returns, and no longer recorded as published) and
        end the relay's control."""
        self._closed = True
        if self.registry is not None:
            for port, inode in self._recorded:
                self.registry.remove(port, inode)
            self._recorded.clear()
        for sock in (*self._listeners, self.control, self.inside):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in accept(), which close() alone does not
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self, listener: socket.socket, port: int) -> None:
        while not self._closed:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            if not self._slots.acquire(blocking=False):
                client.close()  # too many at once
                continue
            threading.Thread(target=self._carry, args=(client, port), daemon=True).start()

    def _carry(self, client: socket.socket, port: int) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with self._send:
                socket.send_fds(self.control, [struct.pack("!H", port)], [theirs.fileno()])
            theirs.close()
            back = threading.Thread(target=_copy, args=(ours, client), daemon=True)
            back.start()
            _copy(client, ours)
            back.join()
        except OSError:
            pass
        finally:
            for sock in (client, ours, theirs):
                with contextlib.suppress(OSError):
                    sock.close()
            self._slots.release()


def _copy(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)
