"""Which loopback ports are published dev servers right now: written by shell_ops, read by web_ops.

shell_ops publishes a sandboxed program's port on the host's 127.0.0.1 through its relay (`start_process(ports=[…])`,
`servers/shell_ops/relay.py`). web_ops reads such a dev server, and nothing else on loopback, so it must know which
ports are relays right now from something no program can forge. Each published port has an entry
`<data dir>/published_ports/<port>.json`: the port, the inode of the relay's listening socket, the pid of the server
that listens and its start time. The data directory is the suite's own state, hidden from sandboxed programs and
refused to the file tools (`shared.confinement.own_state`), so no program writes an entry; and an entry is believed only
while it is true: a regular file of this user that nobody else may write, whose server still runs (same pid, same start
time), and whose socket is the one listening on 127.0.0.1:<port> now (`/proc/net/tcp`, in the reader's own network
namespace, so a relay of another network namespace is not reachable either). A relay removes its entries when it
stops; one left by a killed server is false at once (its socket is gone) and the next reader removes it. Linux only,
as the relay (bubblewrap): elsewhere nothing is published.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import stat
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger("mcp_sections.published_ports")

DIRECTORY = "published_ports"
ADDRESS = "127.0.0.1"  # where the relay listens
LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp
MAX_ENTRY_BYTES = 4096


@dataclass(frozen=True)
class Entry:
    port: int
    inode: int
    pid: int
    started: int  # the server's start time (clock ticks after boot, `/proc/<pid>/stat` field 22)


class PublishedPorts:
    """The registry of one data directory (see the module docstring)."""

    def __init__(self, data_dir: Path) -> None:
        self.directory = Path(data_dir) / DIRECTORY

    def record(self, port: int, inode: int) -> None:
        """Note that this process's relay listens on 127.0.0.1:`port` with the socket `inode`."""
        started = process_start(os.getpid())
        if started is None:
            return  # no /proc: nothing can be verified, so nothing is published
        entry = {"port": port, "inode": inode, "pid": os.getpid(), "started": started}
        try:
            self.directory.mkdir(mode=0o700, exist_ok=True)
            descriptor, temporary = tempfile.mkstemp(prefix=f".{port}-", dir=self.directory)
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                json.dump(entry, file)
            os.replace(temporary, self._path(port))
        except OSError as exc:  # web_ops then does not reach this port: the dev server itself still runs
            logger.warning("cannot record the published port %d in %s: %s", port, self.directory, exc.strerror or exc)

    def remove(self, port: int, inode: int) -> None:
        """Remove the entry of `port` if it is still this socket's (a later relay on the port keeps its own)."""
        entry = self._read(port)
        if entry is not None and entry.inode == inode and entry.pid == os.getpid():
            with contextlib.suppress(OSError):
                self._path(port).unlink()

    def live(self, port: int) -> bool:
        """Whether 127.0.0.1:`port` is a relay's published port now (its entry is true; a false one is removed)."""
        entry = self._read(port)
        if entry is None:
            return False
        if process_start(entry.pid) == entry.started and listening_inode(ADDRESS, port) == entry.inode:
            return True
        if process_start(entry.pid) != entry.started:  # its server is gone: the entry is stale for good
            with contextlib.suppress(OSError):
                self._path(port).unlink()
        return False

    def ports(self) -> list[int]:
        """The ports published right now."""
        try:
            names = [path.stem for path in self.directory.glob("*.json")]
        except OSError:
            return []
        return sorted(int(name) for name in names if name.isdigit() and self.live(int(name)))

    def _path(self, port: int) -> Path:
        return self.directory / f"{port}.json"

    def _read(self, port: int) -> Entry | None:
        """The entry of `port` if it is a regular file of this user that nobody else may write (else None)."""
        try:
            directory = os.lstat(self.directory)
            if not stat.S_ISDIR(directory.st_mode) or not _ours(directory):
                return None
            descriptor = os.open(self._path(port), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode) or not _ours(info) or info.st_size > MAX_ENTRY_BYTES:
                return None
            data = json.loads(os.read(descriptor, MAX_ENTRY_BYTES))
            entry = Entry(int(data["port"]), int(data["inode"]), int(data["pid"]), int(data["started"]))
        except (OSError, ValueError, TypeError, KeyError):
            return None
        finally:
            os.close(descriptor)
        return entry if entry.port == port else None


def _ours(info: os.stat_result) -> bool:
    return info.st_uid == os.geteuid() and not info.st_mode & 0o022


def process_start(pid: int) -> int | None:
    """When process `pid` started (clock ticks after boot), or None when it does not run (or there is no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            text = file.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()  # after the command name, which may hold spaces and parentheses
    try:
        return int(fields[19])  # field 22 of the line; the 20th after the name
    except (IndexError, ValueError):
        return None


def listening_inode(address: str, port: int) -> int | None:
    """The inode of the socket listening on IPv4 `address`:`port` in this network namespace, or None."""
    try:
        with open("/proc/net/tcp", encoding="ascii") as file:
            lines = file.readlines()[1:]
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) < 10 or fields[3] != LISTEN:
            continue
        local, _, hex_port = fields[1].partition(":")
        try:
            if int(hex_port, 16) != port:
                continue
            if socket.inet_ntoa(struct.pack("=I", int(local, 16))) == address:
                return int(fields[9])
        except (ValueError, struct.error, OSError):
            continue
    return None
