"""The keeper of a program run without the sandbox, so that all of its processes end the way the sandbox ends them.

Bubblewrap runs each program as the first process of a new PID namespace and dies with the server: when it ends, the
kernel ends every process of the namespace, whatever session or group they made. Without the sandbox nothing does
that: a program's children that outlive it, or a server killed with SIGKILL, left processes to PID 1. So on Linux a
program run unsandboxed is started by this keeper (`processes.kept`: `python -I -S keeper.py <server pid> <argv…>`):

- it becomes a child subreaper (`PR_SET_CHILD_SUBREAPER`): every orphan below it comes back to it, so its process
  tree holds all the program's descendants, those that started their own session included;
- it gets SIGTERM when the server's thread that started it ends, the server's death by SIGKILL included
  (`PR_SET_PDEATHSIG`);
- it runs the program in a session of its own and waits; when the program ends, it SIGKILLs every process left in
  its tree and exits as the program did (the same status, or the same signal);
- on SIGTERM (the server ends the program, or died) it SIGKILLs its whole tree, then itself.

Signals meant for the program go to the keeper's descendants (`background.signal_program`), never to the keeper.
Only the standard library is imported here: the keeper runs isolated (`-I -S`), in a few tens of milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
ROUNDS = 1000  # kill-and-reap rounds at most (a program that forks as fast as it is killed)


def descendants(pid: int) -> list[tuple[int, str]]:
    """(pid, command name) of every live process below `pid` (zombies aside), from /proc."""
    children: dict[int, list[tuple[int, str]]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read().decode("utf-8", errors="replace")
        except OSError:
            continue
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        state, parent = stat[stat.rfind(")") + 2 :].split()[:2]
        if state not in ("Z", "X"):
            children.setdefault(int(parent), []).append((int(entry), name))
    found: list[tuple[int, str]] = []
    pending = [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child[0])
    return found


def end_tree() -> None:
    """SIGKILL every process below the keeper until none is left, reaping them (orphans come back to it)."""
    me = os.getpid()
    for _ in range(ROUNDS):
        reap(block=False)
        if not has_children():  # a subreaper without children has no descendants at all: no need to look
            return
        alive = descendants(me)
        if not alive:
            break
        for pid, _name in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        reap(block=False)
        time.sleep(0.002)
    reap(block=True)


def has_children() -> bool:
    """Whether any process (running or ended, not yet reaped) is a child of this one."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def reap(*, block: bool) -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, 0 if block else os.WNOHANG)[0]:
            pass


def end_as(status: int) -> None:
    """Exit as the program did: its exit status, or its signal raised on the keeper itself (no core dump)."""
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        os._exit(code)
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
    os._exit(128 - code)  # a signal that does not end a process (it cannot come from waitpid)


def main(server: int, argv: list[str]) -> None:
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def stop(signum: int, frame: object) -> None:
        end_tree()
        os.kill(os.getpid(), signal.SIGKILL)

    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    signal.signal(signal.SIGTERM, stop)
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != server:  # the server ended before the parent-death signal was armed
        os._exit(128 + signal.SIGTERM)
    program = os.fork()
    if program == 0:
        for signum in (signal.SIGTERM, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):  # as a fresh process has them
            signal.signal(signum, signal.SIG_DFL)
        os.setsid()
        try:
            os.execv(argv[0], argv)
        except OSError as exc:
            os.write(2, f"{os.path.basename(argv[0])} could not be started: {exc.strerror}\n".encode())
        os._exit(127)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # the program's input is the program's alone: it sees the end when it is closed
    os.close(devnull)
    status: int | None = None
    while status is None:
        try:
            reaped, waited = os.waitpid(-1, 0)
        except ChildProcessError:  # cannot happen: the keeper alone reaps the program
            status = 255 << 8
            break
        if reaped == program:  # else an orphan that came back to the keeper
            status = waited
    end_tree()
    end_as(status)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:])
